# A coroutine that awaits itself: refused at once, not left hanging until the deadline.
# expect-error: GuestError
# expect-message: RuntimeError: cannot reuse already awaited coroutine
async def me():
    return await holder[0]


holder = [None]
holder[0] = me()
await holder[0]
