# A result nested 20000 lists deep (built by a loop): refused as unserializable, not a crash of the worker.
# expect-error: Unserializable
deep = []
for i in range(20000):
    deep = [deep]
deep
