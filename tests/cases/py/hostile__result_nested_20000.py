# A result nested 20000 lists deep (built by a loop): refused as unserializable, not a crash of the worker.
# expect-error: Unserializable
# pending: converting the result overflows the worker's native stack: the worker aborts (SIGABRT) and the host reports Internal "ended by signal 6"
deep = []
for i in range(20000):
    deep = [deep]
deep
