# expect-error: Timeout
# expect-message: --timeout-ms
while True:
    pass
