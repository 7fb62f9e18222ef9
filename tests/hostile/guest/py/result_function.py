# A function in the result.
# expect-error: Unserializable
# expect-message: the result[1]
# expect-message: function
def helper():
    return 1


[1, helper]
