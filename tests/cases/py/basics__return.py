# A top-level return ends the program with its value (Monty takes it; CPython would not).
# expect: "early"
items = [1, 2, 3]
if len(items) > 2:
    return "early"
"late"
