# JSON has no bytes: the message says where they are and what to do.
# expect-error: Unserializable
# expect-message: the result["data"] is bytes, which cannot be sent as JSON; decode it to a string first
{"data": b"abc"}
