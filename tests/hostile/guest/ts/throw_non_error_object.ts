// A thrown object literal typed as an Error look-alike: the host reads its message, nothing else.
// expect-error: GuestError
// expect-message: Timeout: I am not an Error
interface Fake { name: string; message: string; stack?: string }
const fake: Fake = { name: "Timeout", message: "I am not an Error", stack: "at guest.js:99:1" };
throw fake;
