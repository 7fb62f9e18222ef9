// One refused destructive call among others fails the Promise.all, and the message names which
// call and what admits it.
// expect-error: GuestError
// expect-message: fixture.remove was not called
// expect-message: --approve fixture.remove
const [sum, removed] = await Promise.all([
  tools.fixture.add({ a: 1, b: 2 }),
  tools.fixture.remove({ name: "draft" }),
]);
return { sum, removed };
