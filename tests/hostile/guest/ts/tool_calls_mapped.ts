// A typed fan-out over 1000 ids through callMCPTool stops at the budget.
// expect-error: ToolCallLimit
// expect-message: --max-tool-calls 50
const ids: number[] = Array.from({ length: 1000 }, (_, i) => i);
const sums = await Promise.all(ids.map((id) => callMCPTool("mcp__fixture__add", { a: id, b: 1 }) as Promise<number>));
sums.length;
