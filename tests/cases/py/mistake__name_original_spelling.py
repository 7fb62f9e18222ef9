# The tool's name as its server spells it (get-sum), through call_tool or getattr: it is the same tool, whether the server is up yet or not.
# also-while-starting
# expect: {"called":"5","attribute":"5","python":"5"}
called = await call_tool("fixture.get-sum", {"a": 2, "b": 3})
attribute = await getattr(tools.fixture, "get-sum")(a=2, b=3)
python = await tools.fixture.get_sum(a=2, b=3)
{"called": called, "attribute": attribute, "python": python}
