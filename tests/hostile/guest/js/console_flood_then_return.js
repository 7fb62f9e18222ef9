// Flooding the console and then returning at once does not smuggle the value past the log limit.
// expect-error: LogLimit
// expect-message: --max-log-bytes 65536
console.error("e".repeat(70000));
return "value after the flood";
