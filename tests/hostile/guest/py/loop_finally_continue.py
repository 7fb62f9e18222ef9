# A finally that restarts the loop whatever was raised.
# expect-error: Timeout
# expect-message: --timeout-ms 1500
count = 0
while True:
    try:
        while True:
            count += 1
    finally:
        count = 0
