// Node's require: the answer says there are no modules, network or file system, and that tools are the way out.
// expect-error: GuestError
// expect-message: ReferenceError: require is not defined (require is not available: toolweave's sandbox has no modules, no network and no file system; the only way out of the sandbox is a tool call, tools.<server>.<tool>(...). searchTools("read a file") finds tools by what they do)
const fs = require("fs");
return fs.readFileSync("/tmp/notes.txt", "utf8");
