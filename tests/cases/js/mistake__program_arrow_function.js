// A program that is one async function expression (as other code-mode servers take it): it is called, and its value is the result.
// expect: {"sum":"3","weather":"Oslo"}
async () => {
  const sum = await tools.fixture.add({ a: 1, b: 2 });
  const weather = await tools.fixture.structured({ city: "Oslo" });
  return { sum, weather: weather.city };
}
