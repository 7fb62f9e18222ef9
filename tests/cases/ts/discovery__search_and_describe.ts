// Discovery works from inside code too.
// expect: {"found":true,"declared":true}
const hits = await searchTools("add two numbers");
const described = await describeTools(["fixture.add"]);
return {
  found: ["fixture.add", "fixture.get_sum"].includes(hits[0].name),
  declared: JSON.stringify(described).includes("add("),
};
