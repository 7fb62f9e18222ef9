# A MemoryError with the interpreter's own message, raised by the guest, stays a guest error.
# expect-error: GuestError
# expect-message: MemoryError: memory limit exceeded
raise MemoryError("memory limit exceeded: 33554432 bytes")
