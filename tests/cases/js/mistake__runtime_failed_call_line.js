// A tool that answers with an error: the answer says which call failed, at which line.
// expect-error: GuestError
// expect-message: Error: fixture.fail returned an error: disk full
// expect-message: at line 8, column 35:
const first = await tools.fixture.echo({ message: "ok" });
const second = await tools.fixture.echo({ message: "still ok" });
// This one fails:
const third = await tools.fixture.fail({ message: "disk full" });
return [first, second, third];
