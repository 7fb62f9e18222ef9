# Introspection of the host-provided tools object finds no internals: no __dict__, __class__ tricks or function globals.
# expect: {"dict":"refused","globals":"refused","closure":"refused","code":"refused","type":"refused"}
outcome = {}
probes = {
    "dict": lambda: getattr(tools, "__dict__"),
    "globals": lambda: getattr(tools.fixture.add, "__globals__"),
    "closure": lambda: getattr(tools.fixture.add, "__closure__"),
    "code": lambda: getattr(tools.fixture.add, "__code__"),
    "type": lambda: type(tools).__subclasses__(),
}
for name in ["dict", "globals", "closure", "code", "type"]:
    try:
        probes[name]()
        outcome[name] = "reached"
    except (AttributeError, TypeError, NameError):
        outcome[name] = "refused"
outcome
