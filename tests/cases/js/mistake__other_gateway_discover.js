// code-executor-mcp's discoverMCPTools: the answer names toolweave's function for it.
// expect-error: GuestError
// expect-message: ReferenceError: discoverMCPTools is not defined (discoverMCPTools is another gateway's name: in toolweave, use searchTools(query) (it lists the tools that do what query says))
const all = await discoverMCPTools();
return all.filter((tool) => tool.name.includes("add"));
