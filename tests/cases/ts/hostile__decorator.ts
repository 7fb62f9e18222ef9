// A class decorator (whose body would never return): decorators are not supported, which must be a SyntaxError before anything runs.
// expect-error: SyntaxError
// expect-message: '@'
// pending: oxc leaves the decorator in place and QuickJS rejects it only when the script is evaluated; that is reported as GuestError ("SyntaxError: unexpected token in expression: '@'"), not as the SyntaxError kind
function stall(_target: unknown, _context?: unknown): void {
  while (true) {}
}
@stall
class Service {}
new Service();
