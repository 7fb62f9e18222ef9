# An uncaught exception with a 1.1 MiB message: more than the result (1 MiB) and log (64 KiB) limits.
# expect-error: GuestError
# expect-message: ValueError: xxxxxxxx
# expect-message: … (cut)
raise ValueError("x" * (1100 * 1024))
