// Throwing undefined from inside an async chain.
// expect-error: GuestError
// expect-message: Uncaught undefined
await Promise.resolve();
throw undefined;
