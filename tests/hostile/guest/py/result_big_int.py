# An int beyond 64 bits.
# expect-error: Unserializable
# expect-message: an int beyond 64 bits
2 ** 100
