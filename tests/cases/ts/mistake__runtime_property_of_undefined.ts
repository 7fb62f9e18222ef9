// A field the result does not have, read one level deeper: the answer names what was undefined, at the line as written (types and all).
// expect-error: GuestError
// expect-message: TypeError: cannot read property 'high' of undefined (weather.forecast is undefined)
// expect-message: at line 10, column
interface Weather {
  city: string;
  forecast: { high: number };
}
const weather = (await tools.fixture.structured({ city: "Oslo" })) as Weather;
const high: number = weather.forecast.high;
high
