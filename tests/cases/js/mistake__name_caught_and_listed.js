// Code that catches the error can read the same answer: here it picks the suggested name and calls it.
// also-while-starting
// expect: "7"
try {
  return await tools.fixture.sum({ a: 3, b: 4 });
} catch (error) {
  const suggested = /did you mean ([\w.]+)/.exec(error.message)[1];
  return await callMCPTool(suggested, { a: 3, b: 4 });
}
