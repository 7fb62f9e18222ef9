// The program computes a value and ends with its declaration: the answer says it returned nothing and how to return it.
// expect: null
// expect-message: Warning: the program returned nothing (its value is undefined, sent as null): it ends by declaring `summary`. End it with `return summary`
const weather = await tools.fixture.structured({ city: "Oslo" });
const summary = `${weather.city}: ${weather.conditions}`;
