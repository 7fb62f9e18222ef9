# A RecursionError with the interpreter's message, raised by the guest 900 frames down (under the real limit), stays a guest error.
# expect-error: GuestError
# expect-message: RecursionError: maximum recursion depth exceeded
def down(n):
    if n == 900:
        raise RecursionError("maximum recursion depth exceeded")
    return down(n + 1) + 1


down(0)
