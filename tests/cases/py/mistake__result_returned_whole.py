# A tool's whole result returned as it came: the answer carries it as compact JSON, with no
# indentation for the model to pay for.
# expect: {"city": "Oslo", "temperature": 34.4, "conditions": "cloudy"}
# expect-message: {"city":"Oslo","temperature":34.4,"conditions":"cloudy"}
# expect-no-message: "city": "Oslo"
await tools.fixture.structured(city="Oslo")
