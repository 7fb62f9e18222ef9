// 1500 searchTools calls started at once stop at the engine's discovery budget of 1000.
// expect-error: GuestError
// expect-message: more than 1000 searchTools/describeTools calls in one execution
const calls = [];
for (let i = 0; i < 1500; i++) calls.push(searchTools("add"));
await Promise.all(calls);
