// A promise resolved with itself is rejected with a TypeError (a chaining cycle), not left hanging.
// expect-error: GuestError
// expect-message: TypeError
let resolveLater;
const cycle = new Promise((resolve) => { resolveLater = resolve; });
setTimeout(() => resolveLater(cycle), 0);
await cycle;
