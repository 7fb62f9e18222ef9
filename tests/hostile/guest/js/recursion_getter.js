// A getter that reads itself.
// expect-error: StackOverflow
// expect-message: --stack-kb
const loop = { get self() { return this.self; } };
loop.self;
