// expect-error: GuestError
// expect-message: 42
throw 42;
