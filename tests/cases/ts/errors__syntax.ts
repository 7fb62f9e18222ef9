// expect-error: SyntaxError
// expect-message: line 4
const ok = 1;
const broken = (;
