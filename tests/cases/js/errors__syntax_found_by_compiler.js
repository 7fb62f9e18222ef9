// A redeclaration the parser accepts and QuickJS's compiler refuses: a SyntaxError at its place in the code as written, before anything runs.
// expect-error: SyntaxError
// expect-message: SyntaxError at line 7, column 5: invalid redefinition of lexical identifier
// expect-message: 7 | let total = 2;
await tools.fixture.add({ a: 1, b: 2 });
let total = 1;
let total = 2;
