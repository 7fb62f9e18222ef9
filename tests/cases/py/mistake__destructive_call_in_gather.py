# One refused destructive call among others fails the gather, naming which call and what admits it.
# expect-error: GuestError
# expect-message: fixture.remove was not called
# expect-message: --approve fixture.remove
total, removed = await asyncio.gather(tools.fixture.add(a=1, b=2), tools.fixture.remove(name="draft"))
{"total": total, "removed": removed}
