// QuickJS's interrupt error (InternalError: interrupted), thrown by the guest, is neither a timeout nor a cancellation.
// expect-error: GuestError
// expect-message: interrupted
const Internal = typeof InternalError === "function" ? InternalError : Error;
throw new Internal("interrupted");
