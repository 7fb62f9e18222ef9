// A Map<string, string[]> that grows forever.
// expect-error: MemoryLimit
// expect-message: --memory-mb 32
const index = new Map<string, string[]>();
for (let i = 0; ; i++) index.set(`k${i}`, new Array<string>(64).fill("v"));
