// Describing a destructive tool works; calling it is what needs approval.
// expect-error: GuestError
// expect-message: fixture.remove was not called: its server marks it destructive
// expect-message: --approve fixture.remove
const described = await describeTools(["fixture.remove"]);
if (described.tools.length !== 1) throw new Error("not described");
await tools.fixture.remove({ name: "draft" });
