# A tool's result is a dict, used as if it were text: Python names the type and the attribute, at the line.
# expect-error: GuestError
# expect-message: AttributeError: 'dict' object has no attribute 'upper'
# expect-message: File "main.py", line 6
weather = await tools.fixture.structured(city="Oslo")
weather.upper()
