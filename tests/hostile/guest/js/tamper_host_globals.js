// callMCPTool, console, setTimeout and friends cannot be overwritten; shadowing them is only local.
// expect: {"refused":[true,true,true,true,true],"sum":"5"}
const refused = ["callMCPTool", "console", "setTimeout", "searchTools", "describeTools"].map((name) => {
  try {
    globalThis[name] = () => "forged";
    return false;
  } catch (error) {
    return globalThis[name] !== undefined && String(globalThis[name]) !== "() => \"forged\"";
  }
});
Function.prototype.call = () => "forged";
Function.prototype.apply = () => "forged";
Reflect.apply = () => "forged";
return { refused, sum: await callMCPTool("mcp__fixture__add", { a: 2, b: 3 }) };
