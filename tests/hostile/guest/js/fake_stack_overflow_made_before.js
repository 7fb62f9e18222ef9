// A RangeError with QuickJS's text made first, then a real stack overflow caught, then the first error thrown: still the guest's error.
// expect-error: GuestError
// expect-message: RangeError: Maximum call stack size exceeded
const fake = new RangeError("Maximum call stack size exceeded");
function probe() {
  try {
    return probe();
  } catch (error) {
    return 0;
  }
}
probe();
throw fake;
