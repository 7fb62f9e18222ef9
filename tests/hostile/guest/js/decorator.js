// A decorator in JavaScript (the proposal oxc parses): refused as a SyntaxError before anything runs.
// expect-error: SyntaxError
// expect-message: SyntaxError at line 9, column 3
// expect-message: `@stall`
function stall() {
  for (;;) {}
}
class Service {
  @stall
  method() {}
}
new Service();
