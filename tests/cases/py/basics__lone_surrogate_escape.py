# A Python string cannot hold a lone surrogate: its escape is the replacement character already.
# expect: ["\ufffd", 1]
s = "\ud83d"
[s, len(s)]
