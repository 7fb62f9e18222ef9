# Classes cannot have base classes, so custom exception classes do not exist: raise a built-in
# exception (ValueError, RuntimeError, ...) with a message instead.
# expect-error: SyntaxError
# expect-message: class inheritance and metaclasses: not supported by toolweave's Python
# expect-message: line 6
class ToolFailed(Exception):
    pass
