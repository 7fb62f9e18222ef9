// A real stack overflow caught, and its stack copied onto a RangeError of the guest's own: the copy is still the guest's error.
// expect-error: GuestError
// expect-message: RangeError: Maximum call stack size exceeded
let real;
function probe() {
  try {
    return probe();
  } catch (error) {
    real = error;
    return 0;
  }
}
probe();
const fake = new RangeError("Maximum call stack size exceeded");
fake.stack = real.stack;
throw fake;
