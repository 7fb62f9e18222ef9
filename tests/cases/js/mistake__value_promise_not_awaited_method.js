// A call's result used without await, as text: the answer names the Promise and where to put await.
// expect-error: GuestError
// expect-message: TypeError: log is a Promise, so it has no .split: a call or an async function that was not awaited. Await it where it is made (const log = await ...), or write (await log).split
// expect-message: at line 6, column 8
const log = tools.fixture.echo({ message: "a\nb" });
return log.split("\n").length;
