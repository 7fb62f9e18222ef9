// Atomics.wait on a SharedArrayBuffer must not block the engine thread past the deadline (or at all).
// expect-error: GuestError
// expect-message: TypeError: cannot block in this thread
const shared = new Int32Array(new SharedArrayBuffer(16));
Atomics.wait(shared, 0, 0);
return "woke up";
