// Throwing null: there is no message to read, and the host must not crash reading one.
// expect-error: GuestError
// expect-message: Uncaught null
throw null;
