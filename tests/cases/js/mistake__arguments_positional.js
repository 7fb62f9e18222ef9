// Arguments passed one by one, as to a plain function: the answer says tools take one object of named arguments, and shows the signature.
// also-while-starting
// expect-error: GuestError
// expect-message: invalid arguments for fixture.add: a tool takes its arguments by name, in one object like { name: value }, got a number. Call it as tools.fixture.add(
// expect-message: a: number
await tools.fixture.add(1, 2);
