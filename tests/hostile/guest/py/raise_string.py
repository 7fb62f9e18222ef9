# Raising a string from inside a function: a TypeError, positioned.
# expect-error: GuestError
# expect-message: TypeError
def fail():
    raise "this is not an exception"


fail()
