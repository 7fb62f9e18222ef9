// Throwing a symbol, which cannot be converted to a string implicitly.
// expect-error: GuestError
// expect-message: Uncaught Symbol(escape)
throw Symbol("escape");
