# Discovery works from inside code too.
# expect: {"found":true,"declared":true}
hits = await search_tools("add two numbers")
described = await describe_tools(["fixture.add"])
{
    # Three servers here offer the same adder; any of them is the right first hit.
    "found": hits[0]["name"].endswith(".add") or hits[0]["name"].endswith(".get_sum"),
    "declared": "add(" in str(described),
}
