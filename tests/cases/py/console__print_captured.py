# print output is captured, one log line per line of output, and returned beside the value.
# expect: "done"
# expect-logs: ["hello 1 {'a': [1, 2]}","1-2!","no newline, then more","last"]
print("hello", 1, {"a": [1, 2]})
print(1, 2, sep="-", end="!\n")
print("no newline", end="")
print(", then more")
print("last", end="")
"done"
