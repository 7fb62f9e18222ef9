// Symbol-keyed members are not part of the JSON result; a function-valued member is refused, not dropped.
// expect-error: Unserializable
// expect-message: result.method is a function: call it and send what it returns, or leave it out
const key: unique symbol = Symbol("hidden");
const value = { kept: 1, [key]: "secret", method: (): number => 2 };
value;
