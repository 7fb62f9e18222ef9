# A bytes value grown by a megabyte at a time (bytearray does not exist in this Python).
# expect-error: MemoryLimit
# expect-message: --memory-mb 32
buffer = b""
chunk = b"y" * (1024 * 1024)
while True:
    buffer += chunk
