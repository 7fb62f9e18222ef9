# __import__ is not there to load os behind the import statement's back.
# expect-error: GuestError
# expect-message: NameError
# expect-message: __import__
__import__("os").system("id")
