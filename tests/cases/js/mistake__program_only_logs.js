// A program that reports through the console and returns nothing gets no warning: its logs are its answer.
// expect: null
// expect-logs: ["Oslo is cloudy"]
// expect-no-message: Warning
const weather = await tools.fixture.structured({ city: "Oslo" });
console.log(`${weather.city} is ${weather.conditions}`);
