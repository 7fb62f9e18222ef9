// A toJSON on the result that recurses without end: met while the host converts the result.
// expect-error: StackOverflow
// expect-message: --stack-kb
// pending: a real stack overflow during result conversion is reported as Unserializable ("RangeError: Maximum call stack size exceeded"), not StackOverflow
function deep() { return deep() + 1; }
return { toJSON() { return deep(); } };
