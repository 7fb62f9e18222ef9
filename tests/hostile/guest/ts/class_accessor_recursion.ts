// A class accessor with parameter properties that reads itself.
// expect-error: StackOverflow
// expect-message: --stack-kb
class Box {
  constructor(private readonly seed: number) {}
  get value(): number { return this.value + this.seed; }
}
new Box(1).value;
