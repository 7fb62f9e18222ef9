// Keys the test put in Redis: a string, a list and a hash, each read with its own tool.
// expect: {"greeting":"hello","queue":["a","b","c"],"user":{"name":"Ada","city":"London"},"keys":["greeting","queue","user:1"]}
const greeting = await tools.redis.get({ key: "greeting" });
const queue = await tools.redis.lrange({ name: "queue", start: 0, stop: -1 });
const user = await tools.redis.hgetall({ name: "user:1" });
const scanned = await tools.redis.scan_keys({ pattern: "*" });
return {
  greeting: greeting.result,
  queue: JSON.parse(queue.result),
  user,
  keys: scanned.result.keys.filter((key) => !key.startsWith("written:")).sort(),
};
