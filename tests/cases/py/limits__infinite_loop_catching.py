# Catching the engine's stop does not keep a busy program alive.
# expect-error: Timeout
# expect-message: --timeout-ms
while True:
    try:
        while True:
            pass
    except BaseException:
        pass
