// Node's process.env: the answer says there is no process here, and that tools are the way out.
// expect-error: GuestError
// expect-message: ReferenceError: process is not defined (process is not available: toolweave's sandbox has no modules
const token = process.env.GITHUB_TOKEN;
return token.length;
