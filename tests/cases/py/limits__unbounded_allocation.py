# expect-error: MemoryLimit
# expect-message: --memory-mb
hoard = []
while True:
    hoard.append([0] * 100000)
