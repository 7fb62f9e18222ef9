// A real stack overflow, caught and finished with; then a RangeError with QuickJS's text thrown from the top level stays a guest error.
// expect-error: GuestError
// expect-message: RangeError: Maximum call stack size exceeded
function probe() {
  try {
    return probe();
  } catch (error) {
    return 0;
  }
}
probe();
throw new RangeError("Maximum call stack size exceeded");
