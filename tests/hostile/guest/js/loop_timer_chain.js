// A timer that re-arms itself forever keeps the program alive: that is a timeout, not NeverSettles.
// expect-error: Timeout
// expect-message: --timeout-ms 1500
function tick() { setTimeout(tick, 1); }
tick();
await new Promise(() => {});
