# Catching the MemoryError does not buy more room: the limit is terminal.
# expect-error: MemoryLimit
# expect-message: --memory-mb 32
kept = []
try:
    while True:
        kept.append("m" * 100000)
except MemoryError:
    kept = []
"survived"
