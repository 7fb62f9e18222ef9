# Names with case changes, path tricks, NUL bytes or dunder parts resolve to nothing (surrounding whitespace is trimmed).
# expect: ["called","RuntimeError","called","RuntimeError","RuntimeError","RuntimeError","RuntimeError","RuntimeError","RuntimeError"]
out = []
names = ["fixture.add ", "FIXTURE.ADD", "mcp__fixture__add\n", "fixture..add", "../fixture/add", "fixture.add\u0000", "mcp__fixture__", "__proto__.add", "fixture.__class__"]
for name in names:
    try:
        await call_tool(name, {"a": 1, "b": 2})
        out.append("called")
    except RuntimeError:
        out.append("RuntimeError")
out
