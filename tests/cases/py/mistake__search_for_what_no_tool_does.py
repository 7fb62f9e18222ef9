# Searching for what no configured tool does: every hit is marked weak, so the program can tell
# that nothing fits instead of calling the first one; a query a tool answers is not marked.
# expect: {"found": true, "all_weak": true, "strong": "alpha.add", "strong_marked": false}
# also-while-starting
hits = await search_tools("send an email with the weather to my boss")
strong = await search_tools("add two numbers", 1)
{
    "found": len(hits) > 0,
    "all_weak": all(hit.get("weak") is True for hit in hits),
    "strong": strong[0]["name"],
    "strong_marked": "weak" in strong[0],
}
