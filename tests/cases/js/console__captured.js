// console output is captured and returned beside the value.
// expect: "done"
// expect-logs: ["hello 1 {\"a\":[1,2]}","[warn] careful","[error] bad"]
console.log("hello", 1, { a: [1, 2] });
console.warn("careful");
console.error("bad");
"done"
