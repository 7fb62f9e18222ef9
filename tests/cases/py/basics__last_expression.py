# The value of the last expression statement is the result.
# expect: {"answer":42,"items":[1,2,3]}
base = 21
items = [1, 2, 3]
{"answer": base * 2, "items": items}
