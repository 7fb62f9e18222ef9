// progress(done, total?, message?) returns at once; what it cannot pass on throws a TypeError.
// expect: ["progress(done, total?, message?): done must be a number, got string","progress(done, total?, message?): done must be a finite number of 0 or more, got -1","progress(done, total?, message?): total must be a number, got object","progress(done, total?, message?): total must be a finite number of 0 or more, got inf"]
for (let i = 0; i <= 100000; i++) progress(i, 100000, "step " + i);
progress(1);
const errors = [];
for (const args of [["3"], [-1], [1, {}], [1, Infinity]]) {
  try {
    progress(...args);
  } catch (error) {
    errors.push(error.message);
  }
}
errors
