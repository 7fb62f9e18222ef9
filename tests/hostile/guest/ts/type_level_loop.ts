// Heavy type-level recursion is erased; the `never`-returning function it annotates really loops.
// expect-error: Timeout
// expect-message: --timeout-ms 1500
type Repeat<T, N extends number, Acc extends T[] = []> = Acc["length"] extends N ? Acc : Repeat<T, N, [...Acc, T]>;
type Forever<T> = { next: Forever<T>; value: T };
function spin<T>(_witness?: Repeat<T, 40>, _chain?: Forever<T>): never {
  for (;;) {}
}
spin<string>();
