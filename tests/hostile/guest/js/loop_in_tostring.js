// A toString that never returns, reached through string concatenation.
// expect-error: Timeout
// expect-message: --timeout-ms 1500
const trap = { toString() { while (true) {} } };
"" + trap;
