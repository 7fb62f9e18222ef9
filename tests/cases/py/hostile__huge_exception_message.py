# An uncaught exception with a 1.1 MiB message: more than the result (1 MiB) and log (64 KiB) limits.
# expect-error: GuestError
# expect-message: ValueError: xxxxxxxx
# expect-message: … (cut)
# pending: the traceback reaches the client whole (1.1 MiB), bypassing --max-result-bytes and --max-log-bytes; upstream error texts are cut at 2000 bytes with "… (cut)", guest ones are not
raise ValueError("x" * (1100 * 1024))
