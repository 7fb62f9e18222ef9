// Promise.prototype.then, Promise.resolve and the Promise global replaced: awaiting a tool call still gets the tool's answer.
// expect: "7"
Promise.prototype.then = function () { throw new Error("then hijacked"); };
Promise.prototype.catch = function () { throw new Error("catch hijacked"); };
Promise.resolve = () => 99;
globalThis.Promise = function () { throw new Error("no promises for you"); };
return await tools.fixture.add({ a: 3, b: 4 });
