# A string that doubles until memory is gone.
# expect-error: MemoryLimit
# expect-message: --memory-mb 32
text = "x"
while True:
    text = text + text
