// Promise.race of promises that nothing can settle.
// expect-error: NeverSettles
await Promise.race([new Promise(() => {}), new Promise(() => {}), new Promise(() => {})]);
