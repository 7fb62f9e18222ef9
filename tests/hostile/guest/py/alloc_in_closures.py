# Closures that each capture a large list, chained so that none can be freed.
# expect-error: MemoryLimit
# expect-message: --memory-mb 32
def make(previous):
    data = [0] * 100000

    def total():
        return previous() + len(data)

    return total


chain = lambda: 0
while True:
    chain = make(chain)
