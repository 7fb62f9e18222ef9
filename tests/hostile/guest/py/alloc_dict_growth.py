# A dict that grows a new entry forever.
# expect-error: MemoryLimit
# expect-message: --memory-mb 32
bag = {}
i = 0
while True:
    bag[i] = "v" * 1000
    i += 1
