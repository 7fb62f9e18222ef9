// Each closure captures its own large array; the closures are kept alive in a chain.
// expect-error: MemoryLimit
// expect-message: --memory-mb 32
let chain = () => 0;
while (true) {
  const data = new Array(50000).fill(Math.random());
  const previous = chain;
  chain = () => previous() + data.length;
}
