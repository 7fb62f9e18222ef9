// eval and Function-constructed code run in the same sandbox: process is not defined there either.
// expect-error: GuestError
// expect-message: ReferenceError
// expect-message: process is not defined
const readEnv = new Function("return process.env");
readEnv();
