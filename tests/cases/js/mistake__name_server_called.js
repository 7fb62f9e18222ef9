// A server called as if it were a tool: the answer says so and lists its tools.
// also-while-starting
// expect-error: GuestError
// expect-message: Error: tools.alpha is a server, not a tool: call one of its tools, as tools.alpha.<tool>({ ... }). The tools of alpha are
// expect-message: add,
await tools.alpha({ a: 1, b: 2 });
