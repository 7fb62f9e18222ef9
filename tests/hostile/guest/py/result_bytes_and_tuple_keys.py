# A dict keyed by tuples and holding bytes.
# expect-error: Unserializable
# expect-message: a dict with a key of type tuple
{(1, 2): b"raw"}
