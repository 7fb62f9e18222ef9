# A call at 18:00 in Kolkata: what time is it in Tokyo? Neither zone has daylight saving, so the
# answer holds on any date: 21:30, three and a half hours ahead.
# expect: {"tokyo": "21:30", "difference": "+3.5h"}
converted = await tools.time.convert_time(
    source_timezone="Asia/Kolkata", time="18:00", target_timezone="Asia/Tokyo"
)
{
    "tokyo": converted["target"]["datetime"][11:16],
    "difference": converted["time_difference"],
}
