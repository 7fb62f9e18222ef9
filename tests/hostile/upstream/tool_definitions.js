// One malformed tool definition costs that tool only: the server's other tools are kept, and a
// tool nested deeper than toolweave reads is left out. A deep schema that is kept (48 levels) is
// searched, described and called like any other, in bounded time.
// expect: {"listed":["after_the_bad_ones","deep_schema_48"],"left_out":[],"called":"after_the_bad_ones","described":1,"found":true}
const names = Object.keys(tools.bad_tools);
const listed = ["after_the_bad_ones", "deep_schema_48"].filter((name) => names.includes(name));
const left_out = ["deep_schema_70", "no_schema", "schema_is_text"].filter((name) => names.includes(name));
const called = await tools.bad_tools.after_the_bad_ones({});
const described = (await describeTools(["bad_tools.deep_schema_48"])).tools.length;
const found = (await searchTools("deep schema", 50)).some((hit) => hit.name === "bad_tools.deep_schema_48");
return { listed, left_out, called, described, found };
