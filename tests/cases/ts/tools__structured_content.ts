// structuredContent is the value when the tool sends it.
// expect: {"city":"Oslo","hasTemperature":true}
const weather = await tools.fixture.structured({ city: "Oslo" });
return { city: weather.city, hasTemperature: typeof weather.temperature === "number" };
