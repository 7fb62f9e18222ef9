// structuredClone: a deep copy of nested data with Dates, Maps, Sets, typed arrays, RegExps, BigInts and cycles; a function refused with DataCloneError. The values are Node's.
// expect: {"distinct":true,"cycle":true,"originalRows":[1,2,3],"copyRows":[1,2,3,4],"dates":["2024-01-31T12:00:00.000Z","2000-01-31T12:00:00.000Z",true],"set":["a","b"],"bytes":[1,2,3],"pattern":"/ab+c/gi","bigint":"1","refused":["DataCloneError","structuredClone: a function (callback) cannot be cloned"]}
const when = new Date(Date.UTC(2024, 0, 31, 12));
const original = {
  name: "report",
  when,
  tags: new Set(["a", "b"]),
  index: new Map([["x", { rows: [1, 2, 3] }]]),
  bytes: new Uint8Array([1, 2, 3]),
  pattern: /ab+c/gi,
  nested: { deeper: [{ value: 1n }] },
};
original.self = original;
const copy = structuredClone(original);
copy.index.get("x").rows.push(4);
copy.when.setUTCFullYear(2000);
let refused = null;
try { structuredClone({ callback() {} }); } catch (error) { refused = [error.name, error.message]; }
return {
  distinct: copy !== original && copy.index !== original.index && copy.bytes !== original.bytes,
  cycle: copy.self === copy,
  originalRows: original.index.get("x").rows,
  copyRows: copy.index.get("x").rows,
  dates: [original.when.toISOString(), copy.when.toISOString(), copy.when instanceof Date],
  set: [...copy.tags],
  bytes: Array.from(copy.bytes),
  pattern: String(copy.pattern),
  bigint: String(copy.nested.deeper[0].value),
  refused,
};
