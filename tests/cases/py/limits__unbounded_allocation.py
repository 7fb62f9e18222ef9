# expect-error: MemoryLimit
# expect-message: --memory-mb
# pending: Python runs on the gateway's engine threads, where monty-alloc is not armed and the memory limit is not enforced; this passes once Python runs in worker processes
hoard = []
while True:
    hoard.append([0] * 100000)
