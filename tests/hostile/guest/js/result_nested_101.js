// A result nested 101 arrays deep is refused naming the bound, as in Python; 100 would pass.
// expect-error: Unserializable
// expect-message: arrays and objects nest more than 100 levels deep in the result
let deep = [];
for (let i = 0; i < 101; i++) deep = [deep];
deep
