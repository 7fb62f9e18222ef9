// An object that grows a new property forever.
// expect-error: MemoryLimit
// expect-message: --memory-mb 32
const bag = {};
for (let i = 0; ; i++) bag["key" + i] = "value".repeat(20) + i;
