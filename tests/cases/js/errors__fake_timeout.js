// A guest cannot fake a limit: only the host decides that a timeout happened.
// expect-error: GuestError
// expect-message: Timeout
throw new Error("Timeout: the execution ran longer than 1 s");
