// Discovery works from inside code too.
// expect: {"found":true,"declared":true}
const hits = await searchTools("add two numbers");
const described = await describeTools(["fixture.add"]);
return {
  // Three servers here offer the same adder; any of them is the right first hit.
  found: /\.(add|get_sum)$/.test(hits[0].name),
  declared: JSON.stringify(described).includes("add("),
};
