// What toLocaleString formats without Intl: dates for en-US in UTC, with or without timeZone "UTC"; numbers for en-US, with fraction digits, grouping, percent and US dollars as Intl rounds them. A locale or an option it cannot honour is refused by name. The values are Node's.
// expect: {"date":"7/4/2024, 1:05:09 PM","utc":"1/1/1970, 12:00:00 AM","day":"7/4/2024","time":"1:05:09 PM","numbers":["1,234,567.891","-0.5","1,000","0.123","NaN"],"options":["1,234.50","1,234.57","25.6%","-$1,234.50","1234567","1.01"],"refused":["RangeError","RangeError","RangeError"]}
const refused = [];
for (const attempt of [() => (5).toLocaleString("de-DE"), () => (5).toLocaleString("en-US", { style: "currency", currency: "EUR" }), () => new Date(0).toLocaleDateString("en-US", { weekday: "long" })]) {
  try { attempt(); } catch (error) { refused.push(error.name); }
}
const july = new Date(Date.UTC(2024, 6, 4, 13, 5, 9));
return {
  date: july.toLocaleString(),
  utc: new Date(0).toLocaleString("en-US", { timeZone: "UTC" }),
  day: july.toLocaleDateString(),
  time: july.toLocaleTimeString(),
  numbers: [1234567.891, -0.5, 1000, 0.12345, NaN].map((n) => n.toLocaleString()),
  options: [
    (1234.5).toLocaleString(undefined, { minimumFractionDigits: 2 }),
    (1234.5678).toLocaleString("en-US", { maximumFractionDigits: 2 }),
    (0.2561).toLocaleString("en-US", { style: "percent", maximumFractionDigits: 1 }),
    (-1234.5).toLocaleString("en-US", { style: "currency", currency: "USD" }),
    (1234567).toLocaleString("en-US", { useGrouping: false }),
    (1.005).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 }),
  ],
  refused,
};
