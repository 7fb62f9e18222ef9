// A call put in the result without await: refused, naming where it is and what to do (not a silent {}).
// expect-error: Unserializable
// expect-message: result.sum is a Promise (a call or an async function that was not awaited): await it
const sum = tools.fixture.add({ a: 1, b: 2 });
return { sum };
