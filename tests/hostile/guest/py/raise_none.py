# `raise None` is not an exception: a TypeError where it is raised.
# expect-error: GuestError
# expect-message: TypeError
# expect-message: File "main.py", line 5, in <module>
raise None
