// A single console line far larger than the whole log budget.
// expect-error: LogLimit
// expect-message: --max-log-bytes 65536
console.log("z".repeat(1024 * 1024));
return "unreachable";
