// A program without a value returns null.
// expect: null
const x = 1;
