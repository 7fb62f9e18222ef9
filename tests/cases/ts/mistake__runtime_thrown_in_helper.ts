// An error thrown inside a helper: the answer shows the throw with a caret and the calls in the program that led to it.
// expect-error: GuestError
// expect-message: Error: no temperature for Kyoto
// expect-message: at celsius (line 9, column 43):
// expect-message: 9 |     throw new Error(`no temperature for ${city}`);
// expect-message: at summary (line 15, column 18): return results.map((weather: any) => celsius(weather.city, weather.temperature));
function celsius(city: string, temperature: number | undefined): number {
  if (temperature === undefined || city === "Kyoto") {
    throw new Error(`no temperature for ${city}`);
  }
  return temperature;
}
async function summary(cities: string[]) {
  const results = await Promise.all(cities.map((city) => tools.fixture.structured({ city })));
  return results.map((weather: any) => celsius(weather.city, weather.temperature));
}
return await summary(["Oslo", "Kyoto"]);
