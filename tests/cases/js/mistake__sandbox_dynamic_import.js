// A module loaded at run time: the answer names the module and the way out.
// expect-error: GuestError
// expect-message: could not load module 'node:fs' (fs is not available: toolweave's sandbox has no modules, no network and no file system; the only way out of the sandbox is a tool call
const { readFile } = await import("node:fs");
return readFile;
