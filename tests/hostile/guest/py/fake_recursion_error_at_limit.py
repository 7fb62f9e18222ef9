# The guest finds the deepest frame it may reach, then raises its own RecursionError there: still the guest's error, not the engine's StackOverflow.
# expect-error: GuestError
# expect-message: RecursionError: maximum recursion depth exceeded
def probe(n):
    try:
        return probe(n + 1)
    except RecursionError:
        return n


deepest = probe(0)


def down(n):
    if n == deepest:
        raise RecursionError("maximum recursion depth exceeded")
    return down(n + 1) + 1


down(0)
