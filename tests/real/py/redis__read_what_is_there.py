# The hash and the list the test put in Redis.
# expect: {"city": "London", "queue_length": 3, "last": "c"}
import json

user = await tools.redis.hgetall(name="user:1")
queue = await tools.redis.lrange(name="queue", start=0, stop=-1)
items = json.loads(queue["result"])
{"city": user["city"], "queue_length": len(items), "last": items[-1]}
