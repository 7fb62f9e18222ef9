// Error[Symbol.hasInstance] that throws, met when the host explains the thrown error: still a guest error (its text unreadable), not a crash or another kind.
// expect-error: GuestError
// expect-message: its properties could not be read
Object.defineProperty(Error, Symbol.hasInstance, { value() { throw new Error("instanceof hijacked"); } });
throw new Error("the real error");
