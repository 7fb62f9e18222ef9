# A hash field written, then the whole hash read back beside the one the test put there.
# expect: {"written": {"name": "Grace", "city": "Arlington"}, "seeded_name": "Ada"}
await tools.redis.hset(name="written:py", key="name", value="Grace")
await tools.redis.hset(name="written:py", key="city", value="Arlington")
written = await tools.redis.hgetall(name="written:py")
seeded = await tools.redis.hget(name="user:1", key="name")
{"written": written, "seeded_name": seeded["result"]}
