// A number thrown inside a timer callback that a promise depends on.
// expect-error: GuestError
// expect-message: Uncaught 7
await new Promise<void>((_resolve, reject) => setTimeout(() => reject(7), 0));
