# raw=True gives the whole CallToolResult, for images and resources.
# expect: {"type":"image","mimeType":"image/png","isError":false}
raw = await call_tool("fixture.image", raw=True)
{"type": raw["content"][0]["type"], "mimeType": raw["content"][0]["mimeType"], "isError": raw.get("isError", False)}
