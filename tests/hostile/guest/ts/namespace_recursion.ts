// A namespace whose functions recurse into each other across a merged namespace.
// expect-error: StackOverflow
// expect-message: --stack-kb
namespace Walker {
  export function left(n: number): number { return Walker.right(n + 1) + 1; }
}
namespace Walker {
  export function right(n: number): number { return Walker.left(n + 1) + 1; }
}
Walker.left(0);
