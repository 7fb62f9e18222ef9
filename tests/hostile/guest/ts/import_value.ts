// A value import is refused before anything runs, even in TypeScript.
// expect-error: SyntaxError
// expect-message: `import` is not available
import { readFileSync } from "node:fs";
readFileSync("/etc/passwd", "utf8");
