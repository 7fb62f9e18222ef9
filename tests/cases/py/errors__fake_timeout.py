# A guest cannot fake a limit: only the engine decides that a timeout happened.
# expect-error: GuestError
# expect-message: TimeoutError: Timeout
raise TimeoutError("Timeout: the execution ran longer than 1 s")
