// An Error whose message getter never returns: describing the thrown error must not outlive the deadline.
// expect-error: Timeout
// expect-message: --timeout-ms 1500
// pending: the deadline passes while the host explains the error; the uncatchable interrupt makes explain fail and it is reported as GuestError "Uncaught exception (it could not be described)"
const error = new Error("bait");
Object.defineProperty(error, "message", { get() { for (;;) {} } });
throw error;
