# 20,000 copies of one name are one name: described once, at once.
# expect: {"tools":["fixture.add"],"unknown":0}
described = await describe_tools(["fixture.add"] * 20000)
{"tools": [tool["name"] for tool in described["tools"]], "unknown": len(described["unknown"])}
