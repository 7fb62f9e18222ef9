# The engine's own stop message, raised by the guest as KeyboardInterrupt, is not a timeout.
# expect-error: GuestError
# expect-message: KeyboardInterrupt: toolweave stopped the program: the time limit was reached
raise KeyboardInterrupt("toolweave stopped the program: the time limit was reached")
