// expect: 7
await tools.fixture.add({ a: 2, b: 5 })
