# A tool and its whole server named together: each tool is described once, the one named first
# first.
# expect: {"first": "fixture.add", "repeats": 0, "all_of_fixture": true}
described = await describe_tools(["fixture.add", "fixture", "mcp__fixture__add"])
names = [tool["name"] for tool in described["tools"]]
{
    "first": names[0],
    "repeats": len(names) - len(set(names)),
    "all_of_fixture": len(names) > 5 and all(name.startswith("fixture.") for name in names),
}
