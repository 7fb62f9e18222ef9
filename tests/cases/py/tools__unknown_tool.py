# An unknown name is explained with suggestions (and the Python name of the search function), and what exists: the server's tools.
# expect: {"suggests":true,"lists":true}
try:
    await call_tool("mcp__fixture__ad", {"a": 1, "b": 2})
    suggests = False
except RuntimeError as error:
    suggests = "did you mean fixture.add" in str(error) and 'search_tools("what you need")' in str(error)
try:
    await tools.fixture.ad(a=1, b=2)
    lists = False
except RuntimeError as error:
    lists = "The tools of fixture are add, get_sum" in str(error)
{"suggests": suggests, "lists": lists}
