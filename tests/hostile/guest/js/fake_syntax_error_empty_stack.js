// A SyntaxError thrown at run time with its stack blanked must stay a guest error, not the host's SyntaxError kind.
// expect-error: GuestError
// expect-message: forged syntax
const error = new SyntaxError("forged syntax");
error.stack = "";
throw error;
