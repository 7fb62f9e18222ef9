// A typed call to a destructive tool, through a client that cannot be asked: the refusal names
// the cause and the rule that admits just that tool.
// expect-error: GuestError
// expect-message: fixture.remove was not called: its server marks it destructive, so each call needs approval
// expect-message: --approve fixture.remove
const removed: string = await tools.fixture.remove({ name: "draft" });
return removed;
