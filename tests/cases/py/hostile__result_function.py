# A function in the result.
# expect-error: Unserializable
# expect-message: the result[1]
# expect-message: function
# pending: the message calls the function "a object" ("the result[1] is a object, which cannot be sent as JSON") instead of naming a function
def helper():
    return 1


[1, helper]
