// A tool's result is an object, used as if it were text: the answer names the call that failed and shows its line.
// expect-error: GuestError
// expect-message: TypeError: weather.toUpperCase is not a function
// expect-message: at line 7, column 16:
// expect-message: 7 | return weather.toUpperCase();
const weather = await tools.fixture.structured({ city: "Oslo" });
return weather.toUpperCase();
