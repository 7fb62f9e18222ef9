# Catching the engine's stop at the log limit and returning does not get the value out.
# expect-error: LogLimit
# expect-message: --max-log-bytes 65536
try:
    while True:
        print("flood " * 100)
except BaseException:
    pass
"value after the flood"
