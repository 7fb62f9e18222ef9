// A static import of QuickJS's std module is refused before anything runs.
// expect-error: SyntaxError
// expect-message: `import` is not available
import * as std from "std";
std.loadFile("/etc/passwd");
