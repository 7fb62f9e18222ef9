# Discovery works from inside code too, with Python signatures and stubs; a tool without an
# output schema that has been called is declared with the type its results had, marked observed.
# expect: {"found":true,"signature":"tools.fixture.add(*, a: float, b: float) -> str  # observed","stub":true}
await tools.fixture.add(a=1, b=2)
hits = await search_tools("add two numbers")
described = await describe_tools(["fixture.add"])
{
    # Three servers here offer the same adder; any of them is the right first hit.
    "found": hits[0]["name"].endswith(".add") or hits[0]["name"].endswith(".get_sum"),
    "signature": [hit for hit in hits if hit["name"] == "fixture.add"][0]["signature"],
    "stub": "async def add(*, a: float, b: float)" in described["tools"][0]["declaration"],
}
