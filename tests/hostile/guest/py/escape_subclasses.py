# The classic escape through object.__subclasses__() finds no way out.
# expect-error: GuestError
# expect-message: AttributeError
[cls for cls in ().__class__.__bases__[0].__subclasses__() if cls.__name__ == "Popen"]
