# An unknown name is explained with suggestions (and the Python name of the search function); a missing attribute lists the server's tools.
# expect: {"suggests":true,"lists":true}
try:
    await call_tool("mcp__fixture__ad", {"a": 1, "b": 2})
    suggests = False
except RuntimeError as error:
    suggests = "did you mean" in str(error) and 'search_tools("...")' in str(error)
try:
    await tools.fixture.ad(a=1, b=2)
    lists = False
except AttributeError as error:
    lists = "its tools are add, get_sum" in str(error)
{"suggests": suggests, "lists": lists}
