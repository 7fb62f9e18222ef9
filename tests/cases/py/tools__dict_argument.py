# One positional dict works as well as keyword arguments.
# expect: ["7","7"]
args = {"a": 2, "b": 5}
[await tools.fixture.add(args), await tools.fixture.add(**args)]
