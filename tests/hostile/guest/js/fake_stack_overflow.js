// QuickJS's own stack-overflow error, constructed and thrown from a shallow stack, stays a guest error.
// expect-error: GuestError
// expect-message: RangeError: Maximum call stack size exceeded
throw new RangeError("Maximum call stack size exceeded");
