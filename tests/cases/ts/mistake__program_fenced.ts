```ts
// A program sent inside a markdown fence: the fence is not code.
// expect: "5"
const sum: number = await tools.fixture.add({ a: 2, b: 3 });
sum
```
