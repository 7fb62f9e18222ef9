// A thrown string that is nothing but a lone surrogate: reported, not an empty message.
// expect-error: GuestError
// expect-message: Uncaught �
throw "😀".slice(1);
