// A sloppy-mode timer callback (built with Function) reads arguments.callee.caller.caller: nothing of the host's frames.
// expect: "blocked"
const callback = new Function("resolve", `
  try {
    const outer = arguments.callee.caller;
    resolve(outer ? "reached " + String(outer).slice(0, 40) : "blocked");
  } catch (error) {
    resolve("blocked");
  }
`);
await new Promise((resolve) => setTimeout(callback, 0, resolve));
