// BigInt has no JSON form.
// expect-error: Unserializable
// expect-message: BigInt
return { big: 2n ** 64n };
