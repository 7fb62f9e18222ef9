// A meeting at 09:00 in Tokyo: what time is it in Kolkata? Neither zone has daylight saving, so
// the answer holds on any date: 05:30, three and a half hours behind.
// expect: {"kolkata":"05:30","difference":"-3.5h","dst":false}
const converted = await tools.time.convert_time({
  source_timezone: "Asia/Tokyo",
  time: "09:00",
  target_timezone: "Asia/Kolkata",
});
return {
  kolkata: converted.target.datetime.slice(11, 16),
  difference: converted.time_difference,
  dst: converted.target.is_dst,
};
