// A Map as the result: sent as the object it holds, not {}.
// expect: {"Oslo":"cloudy","Lima":"rain"}
const conditions = new Map();
for (const city of ["Oslo", "Lima"]) {
  const weather = await tools.fixture.structured({ city });
  conditions.set(city, weather.conditions);
}
return conditions;
