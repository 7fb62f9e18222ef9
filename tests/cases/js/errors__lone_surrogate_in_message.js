// A thrown message holding a lone surrogate reaches the model whole, the surrogate as U+FFFD (it
// used to arrive as just "Error").
// expect-error: GuestError
// expect-message: Error: cut before �, and after
throw new Error("cut before " + "😀".slice(0, 1) + ", and after");
