// A value written with a 60-second expiry is read back, with its type and its time to live.
// expect: {"value":"from javascript","type":"string","expiring":true}
await tools.redis.set({ key: "written:js", value: "from javascript", expiration: 60 });
const value = await tools.redis.get({ key: "written:js" });
const described = await tools.redis.type({ key: "written:js" });
const { type, ttl } = described.result;
return { value: value.result, type, expiring: ttl > 0 && ttl <= 60 };
