# A frozenset in a tuple inside a list: sent as arrays, in place.
# expect: {"items":[1,[[2],"x"]]}
{"items": [1, (frozenset({2}), "x")]}
