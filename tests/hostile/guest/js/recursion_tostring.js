// A toString that stringifies itself.
// expect-error: StackOverflow
// expect-message: --stack-kb
const loop = { toString() { return "<" + this + ">"; } };
String(loop);
