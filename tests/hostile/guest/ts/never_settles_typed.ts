// A typed deferred whose resolve is never called.
// expect-error: NeverSettles
class Deferred<T> {
  resolve!: (value: T) => void;
  readonly promise = new Promise<T>((resolve) => { this.resolve = resolve; });
}
const gate = new Deferred<string>();
await gate.promise;
