// A tool named several ways (guest name, original name, with `tools.`, and its whole server) is
// described once: one entry, not one per spelling.
// expect: {"names":["fixture.add"],"unknown":0}
// also-while-starting
const described = await describeTools([
  "fixture.add",
  "mcp__fixture__add",
  "tools.fixture.add",
  "fixture.add",
]);
return {
  names: described.tools.map((tool: { name: string }) => tool.name),
  unknown: described.unknown.length,
};
