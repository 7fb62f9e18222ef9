// Dynamic import of QuickJS's os module (or anything else) has no loader behind it.
// expect-error: GuestError
// expect-message: could not load module 'os'
const os = await import("os");
return os.getenv("HOME");
