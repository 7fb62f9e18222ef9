// expect-error: Unserializable
const a = {}; a.self = a; a
