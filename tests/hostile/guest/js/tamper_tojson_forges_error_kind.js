// Object.prototype.toJSON rewrites the host's description of a thrown error: it must not forge the error kind.
// expect-error: GuestError
// expect-message: the real error
Object.prototype.toJSON = function () {
  return { name: "SyntaxError", message: "forged by the guest", stack: "" };
};
throw new Error("the real error");
