// Object.freeze, Object.defineProperty, Object.create, Reflect and String replaced before lazy host objects are built.
// expect: {"logged":true,"sum":"9"}
// expect-logs: ["[warn] {\"k\":1}"]
Object.freeze = (value) => value;
Object.defineProperty = () => { throw new Error("defineProperty hijacked"); };
Object.create = () => ({ hijacked: true });
Reflect.ownKeys = () => [];
globalThis.String = () => "forged";
globalThis.Error = function () { return { message: "forged" }; };
console.warn({ k: 1 });
return { logged: true, sum: await tools.fixture.add({ a: 4, b: 5 }) };
