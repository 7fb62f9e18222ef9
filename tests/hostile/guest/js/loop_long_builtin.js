// One long built-in call: indexOf over a sparse array of 2^31-1 holes runs no guest code between steps.
// expect-error: Timeout
// expect-message: --timeout-ms 1500
const holes = [];
holes.length = 2 ** 31 - 1;
holes.indexOf("needle");
