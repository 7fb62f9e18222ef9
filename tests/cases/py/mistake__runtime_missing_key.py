# A key the result does not have: the traceback shows the line and the key.
# expect-error: GuestError
# expect-message: KeyError: forecast
# expect-message: line 6
weather = await tools.fixture.structured(city="Oslo")
weather["forecast"]["high"]
