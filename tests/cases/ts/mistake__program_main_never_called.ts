// A main function defined and never called: it is called.
// expect: 9
async function main(): Promise<number> {
  const a = await tools.fixture.add({ a: 2, b: 3 });
  return Number(a) + 4;
}
