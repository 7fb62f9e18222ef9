// Two functions calling each other without end.
// expect-error: StackOverflow
// expect-message: --stack-kb
function ping(n) { return pong(n + 1) + 1; }
function pong(n) { return ping(n + 1) + 1; }
ping(0);
