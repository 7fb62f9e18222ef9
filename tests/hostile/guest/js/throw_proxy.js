// A thrown Proxy whose every trap throws: instanceof and property reads in the host's explain fail.
// expect-error: GuestError
// expect-message: Uncaught exception
const refuse = () => { throw new Error("trap"); };
throw new Proxy({}, { get: refuse, has: refuse, getPrototypeOf: refuse, ownKeys: refuse, getOwnPropertyDescriptor: refuse });
