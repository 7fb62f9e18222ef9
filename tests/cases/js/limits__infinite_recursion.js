// expect-error: StackOverflow
// expect-message: --stack-kb
function down(n) { return down(n + 1) + 1; }
down(0);
