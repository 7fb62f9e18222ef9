# A list that contains itself.
# expect-error: Unserializable
# expect-message: contains itself
loop = [1, 2]
loop.append(loop)
loop
