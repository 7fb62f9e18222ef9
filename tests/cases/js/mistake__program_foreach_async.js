// forEach with an async callback does not wait: the calls still running at the end are named, with how to await them.
// expect: "done"
// expect-message: Warning: the program ended while 2 tool calls it made were still running: they were cancelled
// expect-message: `forEach` with an async callback does not wait
["Oslo", "Lima"].forEach(async (city) => {
  await tools.fixture.slow({ ms: 500 });
});
return "done";
