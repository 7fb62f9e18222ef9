// Array.prototype methods and the array iterator replaced by traps: tool calls and search are unaffected.
// expect: {"sum":"3","viaName":"7","found":true}
const trap = function () { throw new Error("trapped"); };
for (const name of ["push", "indexOf", "map", "join", "pop", "slice", "concat", "forEach", "filter"]) {
  Array.prototype[name] = trap;
}
Array.prototype[Symbol.iterator] = trap;
const sum = await tools.fixture.add({ a: 1, b: 2 });
const viaName = await callMCPTool("mcp__fixture__add", { a: 3, b: 4 });
const hits = await searchTools("add two numbers", 3);
return { sum, viaName, found: hits.length > 0 };
