// 10 MB of console output ends the execution.
// expect-error: LogLimit
// expect-message: --max-log-bytes
const line = "x".repeat(1000);
for (let i = 0; i < 10000; i++) console.log(line);
