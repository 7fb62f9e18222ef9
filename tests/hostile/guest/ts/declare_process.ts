// `declare` only convinces the type checker: at run time process is still not there.
// expect-error: GuestError
// expect-message: ReferenceError
// expect-message: process is not defined
declare const process: { env: Record<string, string> };
const secret: string = process.env.FIXTURE_SECRET;
secret;
