# NaN and infinity have no JSON form.
# expect-error: Unserializable
# expect-message: NaN
# expect-message: use None or a string
{"ratio": float("nan")}
