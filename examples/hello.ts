// Run with: ./target/release/toolweave run examples/hello.ts --config examples/mcp.json
interface Forecast {
  city: string;
  temperature: number;
  conditions: string;
}

const cities = ["Oslo", "Lima", "Kyoto"];

// Calls to two servers, all at once.
const [sum, ...forecasts] = await Promise.all([
  tools.demo.add({ a: 2, b: 5 }),
  ...cities.map((city) => tools.weather.structured({ city }) as Promise<Forecast>),
]);

const warmest = forecasts.reduce((best, f) => (f.temperature > best.temperature ? f : best));
console.log(`checked ${forecasts.length} cities`);

// Only what matters goes back to the model. `add` answers with text ("7"), which arrives as sent.
return { sum: Number(sum), warmest: warmest.city, conditions: warmest.conditions };
