// A generic pool that keeps every Float64Array it makes.
// expect-error: MemoryLimit
// expect-message: --memory-mb 32
class Pool<T extends ArrayBufferView> {
  private items: T[] = [];
  constructor(private readonly make: () => T) {}
  grow(): void { this.items.push(this.make()); }
}
const pool = new Pool<Float64Array>(() => new Float64Array(256 * 1024));
for (;;) pool.grow();
