# `yield` is not supported: build a list, or use a generator expression.
# expect-error: SyntaxError
# expect-message: yield expressions: not supported
def numbers():
    yield 1
