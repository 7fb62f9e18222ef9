// A toJSON on the result that recurses without end: met while the host converts the result.
// expect-error: StackOverflow
// expect-message: --stack-kb
function deep() { return deep() + 1; }
return { toJSON() { return deep(); } };
