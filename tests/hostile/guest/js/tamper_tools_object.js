// The tools object, its namespaces and its functions cannot be replaced, extended or deleted.
// expect: {"attempts":["refused","refused","refused","refused","refused","refused"],"sum":"3"}
const attempts = [
  () => { tools.fixture = { add: async () => 99 }; },
  () => { tools.fixture.add = async () => 99; },
  () => { tools.fixture.add.raw = async () => 99; },
  () => { delete globalThis.tools; },
  () => { Object.defineProperty(globalThis, "tools", { value: {} }); },
  () => { Object.setPrototypeOf(tools.fixture, { add: async () => 99 }); },
].map((attempt) => {
  try {
    attempt();
    return "allowed";
  } catch (error) {
    return "refused";
  }
});
return { attempts, sum: await tools.fixture.add({ a: 1, b: 2 }) };
