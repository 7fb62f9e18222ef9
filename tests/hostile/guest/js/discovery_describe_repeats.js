// 20,000 copies of one name are one name: described once, at once.
// expect: {"tools":["fixture.add"],"unknown":0}
const described = await describeTools(Array(20000).fill("fixture.add"));
return { tools: described.tools.map((tool) => tool.name), unknown: described.unknown.length };
