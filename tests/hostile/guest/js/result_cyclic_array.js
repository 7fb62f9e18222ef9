// An array that contains itself.
// expect-error: Unserializable
// expect-message: result[2] is the value at result again, inside itself (a cycle)
const list = [1, 2];
list.push(list);
return list;
