// A server that does not exist (the model guessed "fs"): the answer lists the servers and the tools that come close.
// also-while-starting
// expect-error: GuestError
// expect-message: Error: unknown tool "fs.add": there is no server "fs"; did you mean fixture.add, alpha.add, beta.add? The servers are alpha, beta, fixture.
const sum: number = await tools.fs.add({ a: 1, b: 2 });
sum
