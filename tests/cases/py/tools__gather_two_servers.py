# The example on the fixture servers: keyword arguments, two servers at once.
# expect: {"sum":"7","city":"Oslo","hasTemperature":true}
a, b = await asyncio.gather(tools.alpha.add(a=2, b=5), tools.fixture.structured(city="Oslo"))
{"sum": a, "city": b["city"], "hasTemperature": isinstance(b["temperature"], (int, float))}
