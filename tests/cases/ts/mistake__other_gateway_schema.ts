// code-executor-mcp's getToolSchema: the answer names toolweave's function for it.
// expect-error: GuestError
// expect-message: ReferenceError: getToolSchema is not defined (getToolSchema is another gateway's name: in toolweave, use describeTools([name]) (the tool's TypeScript declaration))
const schema = await getToolSchema("fixture.add");
schema.parameters.required;
