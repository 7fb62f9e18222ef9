// A toJSON deep inside the result that throws.
// expect-error: Unserializable
// expect-message: toJSON says no
return { list: [1, 2, { toJSON() { throw new TypeError("toJSON says no"); } }] };
