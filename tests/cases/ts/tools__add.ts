// The fixture's add answers with its sum as text: code receives the text.
// expect: "7"
await tools.fixture.add({ a: 2, b: 5 })
