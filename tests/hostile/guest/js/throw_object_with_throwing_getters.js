// A thrown Error whose name and message getters throw: reported as a guest error, without crashing.
// expect-error: GuestError
// expect-message: its properties could not be read
const error = new Error("bait");
Object.defineProperty(error, "name", { get() { throw new Error("no name for you"); } });
Object.defineProperty(error, "message", { get() { throw new Error("no message for you"); } });
throw error;
