# A frozenset hidden in a tuple inside a list: named with its place.
# expect-error: Unserializable
# expect-message: the result["items"][1][0] is a frozenset
# expect-message: list(...)
{"items": [1, (frozenset({1, 2}), "x")]}
