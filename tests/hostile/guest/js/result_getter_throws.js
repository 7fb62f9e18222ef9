// A getter on the result that throws while the host converts it.
// expect-error: Unserializable
// expect-message: Error: read me if you can
return { fine: 1, get broken() { throw new Error("read me if you can"); } };
