// A SyntaxError thrown at run time with its stack blanked must stay a guest error, not the host's SyntaxError kind.
// expect-error: GuestError
// expect-message: forged syntax
// pending: failure() treats any thrown SyntaxError whose stack is empty as the engine's own parse error, so the guest chooses the SyntaxError kind (at line 1, column 1)
const error = new SyntaxError("forged syntax");
error.stack = "";
throw error;
