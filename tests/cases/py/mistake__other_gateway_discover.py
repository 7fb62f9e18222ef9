# code-executor-mcp's discover_mcp_tools: the answer names toolweave's function for it.
# expect-error: GuestError
# expect-message: NameError: name 'discover_mcp_tools' is not defined (discover_mcp_tools is another gateway's name: in toolweave, use search_tools(query) (it lists the tools that do what query says))
tools_found = discover_mcp_tools()
[tool["name"] for tool in tools_found]
