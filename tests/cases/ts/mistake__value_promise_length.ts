// A list read from a call made without await: the answer names the Promise, where .length would have been undefined.
// expect-error: GuestError
// expect-message: TypeError: tools.fixture.echo({ message: "x" }) is a Promise, so it has no .length: a call or an async function that was not awaited. Await it where it is made (const value = await ...), or write (await tools.fixture.echo({ message: "x" })).length
const count: number = (tools.fixture.echo({ message: "x" }) as any).length;
count;
