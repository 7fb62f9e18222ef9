// Many tiny lines: each empty line still counts against the log budget.
// expect-error: LogLimit
// expect-message: --max-log-bytes 65536
for (let i = 0; i < 200000; i++) console.log("");
return "done";
