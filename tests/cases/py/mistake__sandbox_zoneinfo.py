# zoneinfo for a time zone: the answer says it is not available (not that it is a third-party package) and what to do instead.
# expect-error: GuestError
# expect-message: ModuleNotFoundError: No module named 'zoneinfo' (zoneinfo is not available in toolweave's Python (it has no time zone data): use datetime.timezone.utc or a fixed offset (timezone(timedelta(hours=9))), or a tool that converts times, if a server offers one (search_tools("convert time zone")))
# expect-no-message: third-party
from zoneinfo import ZoneInfo
from datetime import datetime
datetime.now(ZoneInfo("Asia/Tokyo")).isoformat()
