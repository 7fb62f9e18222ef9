# asyncio has gather and run only: no sleep, create_task, Future or wait_for.
# expect-error: GuestError
# expect-message: module 'asyncio' has no attribute 'sleep'
await asyncio.sleep(1)
