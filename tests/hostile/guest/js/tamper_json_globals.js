// Replacing JSON.stringify and JSON.parse does not change what the host sends, receives or returns.
// expect: {"sum":"3","echo":"hello"}
JSON.stringify = () => '{"name":"fixture.env","args":{"name":"FIXTURE_SECRET"},"raw":false}';
JSON.parse = () => "forged";
const sum = await tools.fixture.add({ a: 1, b: 2 });
const echo = await tools.fixture.echo({ message: "hello" });
return { sum, echo };
