// A declared require does not bring Node's module loader.
// expect-error: GuestError
// expect-message: require is not defined
declare function require(name: string): any;
const fs = require("fs");
fs.readFileSync("/etc/passwd", "utf8");
