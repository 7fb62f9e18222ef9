// What toLocaleString formats without Intl: en-US in UTC, with or without timeZone "UTC"; numbers grouped with at most three decimals. A locale or an option it cannot honour is refused by name.
// expect: {"date":"1/1/1970, 12:00:00 AM","utc":"1/1/1970, 12:00:00 AM","day":"1/1/1970","time":"12:00:00 AM","numbers":["1,234,567.891","-0.5","1,000","0.123","NaN"],"refused":["RangeError","RangeError"]}
const refused = [];
for (const attempt of [() => (5).toLocaleString("de-DE"), () => new Date(0).toLocaleDateString("en-US", { weekday: "long" })]) {
  try { attempt(); } catch (error) { refused.push(error.name); }
}
return {
  date: new Date(0).toLocaleString(),
  utc: new Date(0).toLocaleString("en-US", { timeZone: "UTC" }),
  day: new Date(0).toLocaleDateString(),
  time: new Date(0).toLocaleTimeString(),
  numbers: [1234567.891, -0.5, 1000, 0.12345, NaN].map((n) => n.toLocaleString()),
  refused,
};
