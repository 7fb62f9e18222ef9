// Error[Symbol.hasInstance] that throws: the host tells errors apart without instanceof, so the thrown error is reported as it is, not as unreadable, a crash or another kind.
// expect-error: GuestError
// expect-message: Error: the real error
Object.defineProperty(Error, Symbol.hasInstance, { value() { throw new Error("instanceof hijacked"); } });
throw new Error("the real error");
