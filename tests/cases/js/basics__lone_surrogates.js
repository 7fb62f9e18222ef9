// Lone surrogates (what `.slice()` leaves of an emoji) reach the host as U+FFFD: in console lines,
// in tool arguments (the fixture echoes its message back) and in the result. An object in a
// console line is shown as JSON, where a lone surrogate is its escape.
// expect: {"half": "\ufffd", "echoed": "cut \ufffd", "keyed": {"\ufffd": 1}, "whole": "😀"}
// expect-logs: ["\ufffd and \ufffd", "[\"\\ud83d\"]"]
const high = "😀".slice(0, 1);
const low = "😀".slice(1);
console.log(high, "and", low);
console.log([high]);
const echoed = await tools.fixture.echo({ message: "cut " + high });
return { half: high, echoed, keyed: { [low]: 1 }, whole: high + low };
