// An array that contains itself.
// expect-error: Unserializable
// expect-message: circular
const list = [1, 2];
list.push(list);
return list;
