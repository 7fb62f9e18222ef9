// A value one byte over --max-result-bytes (1048576), 1048575 characters plus two quotes, is kept
// behind a handle whose description stays small, and reads back whole. (A result that large
// becomes a handle the same way: see the protocol tests.)
// expect: [1048577, true, true]
const kept = await handle("r".repeat(1048575));
const back = await results.get(kept);
return [kept.bytes, back === "r".repeat(1048575), JSON.stringify(kept).length < 1000];
