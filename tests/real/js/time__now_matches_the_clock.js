// The server's current time in UTC agrees with the clock the program reads (within two minutes).
// expect: {"timezone":"UTC","inStep":true}
const now = await tools.time.get_current_time({ timezone: "UTC" });
const skew = Math.abs(Date.parse(now.datetime) - Date.now());
return { timezone: now.timezone, inStep: skew < 120000 };
