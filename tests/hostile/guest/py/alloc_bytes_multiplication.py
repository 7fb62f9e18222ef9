# One huge bytes multiplication.
# expect-error: MemoryLimit
# expect-message: --memory-mb 32
blob = b"x" * (2 * 1024 * 1024 * 1024)
len(blob)
