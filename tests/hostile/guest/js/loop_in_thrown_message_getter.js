// An Error whose message getter never returns: describing the thrown error must not outlive the deadline.
// expect-error: Timeout
// expect-message: --timeout-ms 1500
const error = new Error("bait");
Object.defineProperty(error, "message", { get() { for (;;) {} } });
throw error;
