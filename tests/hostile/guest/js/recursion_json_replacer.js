// A JSON.stringify replacer that calls JSON.stringify on the same value.
// expect-error: StackOverflow
// expect-message: --stack-kb
const value = { a: 1 };
function replacer(key, item) { return JSON.stringify(value, replacer); }
JSON.stringify(value, replacer);
