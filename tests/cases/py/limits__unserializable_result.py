# JSON has no sets: the message says where the set is and what to do.
# expect-error: Unserializable
# expect-message: the result["tags"] is a set, which cannot be sent as JSON; convert it with list(...)
{"tags": {"a", "b"}}
