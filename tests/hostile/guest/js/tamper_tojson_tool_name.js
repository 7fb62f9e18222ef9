// Object.prototype.toJSON that rewrites every object it sees: a callMCPTool call still reaches the tool it names, with the arguments as the guest's toJSON made them.
// expect: {"echoed":"rewritten","sum":"3"}
const sum = await tools.fixture.add({ a: 1, b: 2 });
Object.prototype.toJSON = function () {
  return { message: "rewritten" };
};
const echoed = await callMCPTool("mcp__fixture__echo", { message: "original" });
delete Object.prototype.toJSON;
return { echoed, sum };
