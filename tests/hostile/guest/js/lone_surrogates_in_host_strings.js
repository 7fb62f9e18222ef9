// Lone surrogates in every string the host reads: a tool's name, a search query, names to
// describe, a thrown string. Each arrives as U+FFFD; none throws a TypeError or vanishes.
// expect: [true, true, true]
const high = "😀".slice(0, 1);
const seen = [];
seen.push(await callMCPTool("fixture.ec" + high + "ho", {}).then(() => false, (e) => e.message.includes("fixture.ec\ufffdho")));
seen.push(Array.isArray(await searchTools("echo " + high)));
seen.push(await describeTools(["fixture.ec" + high]).then(() => false, (e) => e.message.includes("fixture.ec\ufffd")));
return seen;
