// expect-error: NeverSettles
await new Promise(() => {});
