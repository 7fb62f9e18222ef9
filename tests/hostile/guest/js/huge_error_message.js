// An uncaught Error with a 1.1 MiB message: more than the result (1 MiB) and log (64 KiB) limits.
// expect-error: GuestError
// expect-message: Error: xxxxxxxx
// expect-message: … (cut)
throw new Error("x".repeat(1100 * 1024));
