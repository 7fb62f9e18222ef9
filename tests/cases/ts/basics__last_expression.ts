// The value of the last expression statement is the result when there is no return.
// expect: {"answer":42,"items":[1,2,3]}
const base: number = 21;
const items = [1, 2, 3];
({ answer: base * 2, items })
