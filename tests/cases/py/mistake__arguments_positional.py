# Arguments passed by position: the answer says tools take named arguments, and shows the signature.
# also-while-starting
# expect-error: GuestError
# expect-message: RuntimeError: invalid arguments for fixture.add: a tool takes its arguments by name, in one object like { name: value }, got 2 positional arguments. Call it as tools.fixture.add(*, a: float, b: float) -> Any
await tools.fixture.add(1, 2)
