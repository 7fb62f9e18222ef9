// Symbol-keyed and function-valued members are not part of the JSON result.
// expect: {"kept":1}
const key: unique symbol = Symbol("hidden");
const value = { kept: 1, [key]: "secret", method: (): number => 2 };
value;
