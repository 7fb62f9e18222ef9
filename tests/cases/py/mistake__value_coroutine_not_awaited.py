# A call put in the result without await: refused, naming where it is and what to do.
# expect-error: Unserializable
# expect-message: the result["sum"] is a coroutine
# expect-message: a call that was not awaited, which cannot be sent as JSON; await it
total = tools.fixture.add(a=1, b=2)
{"sum": total}
