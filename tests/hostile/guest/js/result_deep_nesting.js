// A result nested 100000 arrays deep: refused as unserializable, and the host stays up.
// expect-error: Unserializable
// expect-message: the result cannot be converted to JSON
let deep = [];
for (let i = 0; i < 100000; i++) deep = [deep];
return deep;
