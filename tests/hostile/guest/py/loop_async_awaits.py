# An async busy loop: every await is on a coroutine that returns at once.
# expect-error: Timeout
# expect-message: --timeout-ms 1500
async def nothing():
    return None


while True:
    await nothing()
