// A real stack overflow, caught and finished with; then a RangeError with QuickJS's text thrown from the top level stays a guest error.
// expect-error: GuestError
// expect-message: RangeError: Maximum call stack size exceeded
// pending: the allocator's deepest-stack mark is a high-water mark for the whole execution: once any overflow happened (even caught), every later RangeError with that message is reported as StackOverflow
function probe() {
  try {
    return probe();
  } catch (error) {
    return 0;
  }
}
probe();
throw new RangeError("Maximum call stack size exceeded");
