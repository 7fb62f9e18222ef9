# A list of a billion references, made in one multiplication.
# expect-error: MemoryLimit
# expect-message: --memory-mb 32
cells = [None] * (10**9)
len(cells)
