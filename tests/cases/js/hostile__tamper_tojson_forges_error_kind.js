// Object.prototype.toJSON rewrites the host's description of a thrown error: it must not forge the error kind.
// expect-error: GuestError
// expect-message: the real error
// pending: explain() builds its answer with JSON.stringify, so a guest toJSON replaces it; name "SyntaxError" with an empty stack is then reported as a SyntaxError at line 1 with the guest's text
Object.prototype.toJSON = function () {
  return { name: "SyntaxError", message: "forged by the guest", stack: "" };
};
throw new Error("the real error");
