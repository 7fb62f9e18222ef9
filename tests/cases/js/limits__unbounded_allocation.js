// expect-error: MemoryLimit
// expect-message: --memory-mb
const hoard = [];
while (true) hoard.push(new Array(100000).fill("x"));
