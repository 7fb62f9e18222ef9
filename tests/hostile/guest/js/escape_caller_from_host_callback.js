// Sloppy-mode functions run by the host (a timer callback, a toJSON during result conversion) cannot reach their caller.
// expect: {"timer":"blocked","toJSON":"blocked"}
const probe = new Function(`
  try {
    const caller = arguments.callee.caller;
    return caller === null || caller === undefined ? "blocked" : "reached " + typeof caller;
  } catch (error) {
    return "blocked";
  }
`);
const timer = await new Promise((resolve) => setTimeout(() => resolve(probe()), 0));
return { toJSON() { return { timer, toJSON: probe() }; } };
