// A date formatted for another time zone: refused, naming what is missing, where it used to answer in UTC without a word.
// expect-error: GuestError
// expect-message: RangeError: Date.prototype.toLocaleString(): the time zone "Asia/Tokyo" cannot be honoured: toolweave's JavaScript has no Intl (no locale or time zone data). Without arguments, or with timeZone "UTC", it formats in UTC for en-US ("1/1/1970, 12:00:00 AM")
return new Date(0).toLocaleString("en-US", { timeZone: "Asia/Tokyo" });
