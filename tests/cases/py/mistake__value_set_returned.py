# A set in the result: sent as an array.
# expect: {"sizes":[3]}
sizes = {len(word) for word in ["one", "two", "six"]}
{"sizes": sizes}
