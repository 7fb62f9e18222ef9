// A result that is not a single text item resolves to the content array.
// expect: ["image"]
const content = await tools.fixture.image({});
content.map((item: { type: string }) => item.type)
