// An uncaught Error with a 1.1 MiB message: more than the result (1 MiB) and log (64 KiB) limits.
// expect-error: GuestError
// expect-message: Error: xxxxxxxx
// expect-message: … (cut)
// pending: the guest's error text reaches the client whole (1.1 MiB), bypassing --max-result-bytes and --max-log-bytes; upstream error texts are cut at 2000 bytes with "… (cut)", guest ones are not
throw new Error("x".repeat(1100 * 1024));
