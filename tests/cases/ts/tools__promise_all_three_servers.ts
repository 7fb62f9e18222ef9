// Calls to three servers at once; each answers with its own server name.
// expect: {"total":21,"echoes":["alpha","beta","fixture"]}
const [a, b, c] = await Promise.all([
  tools.alpha.add({ a: 1, b: 2 }),
  tools.beta.add({ a: 3, b: 4 }),
  tools.fixture.add({ a: 5, b: 6 }),
]);
const echoes = await Promise.all(
  [tools.alpha, tools.beta, tools.fixture].map((server) => server.whoami({})),
);
return { total: Number(a) + Number(b) + Number(c), echoes };
