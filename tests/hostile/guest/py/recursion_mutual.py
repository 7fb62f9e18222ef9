# Two functions calling each other without end.
# expect-error: StackOverflow
# expect-message: --stack-kb
def ping(n):
    return pong(n + 1) + 1


def pong(n):
    return ping(n + 1) + 1


ping(0)
