// Typed arrays hold their bytes outside the JS heap objects: they count against the limit too.
// expect-error: MemoryLimit
// expect-message: --memory-mb 32
const kept = [];
while (true) kept.push(new Uint8Array(1 << 20));
