// A class decorator (whose body would never return): decorators are not supported, which must be a SyntaxError before anything runs.
// expect-error: SyntaxError
// expect-message: '@'
function stall(_target: unknown, _context?: unknown): void {
  while (true) {}
}
@stall
class Service {}
new Service();
