// A thrown plain object whose toString and toJSON both throw.
// expect-error: GuestError
// expect-message: Uncaught [unprintable value]
throw {
  toString() { throw new Error("toString refused"); },
  toJSON() { throw new Error("toJSON refused"); },
};
