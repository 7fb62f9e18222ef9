# A loop that catches the engine's KeyboardInterrupt by name and keeps spinning.
# expect-error: Timeout
# expect-message: --timeout-ms 1500
while True:
    try:
        while True:
            pass
    except KeyboardInterrupt:
        continue
