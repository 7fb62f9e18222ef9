// Catching whatever happens at the 51st call and returning anyway still ends in ToolCallLimit.
// expect-error: ToolCallLimit
// expect-message: --max-tool-calls 50
let made = 0;
for (let i = 0; i < 100; i++) {
  try {
    await tools.fixture.add({ a: 1, b: 1 });
    made++;
  } catch (error) {
    break;
  }
}
return made;
