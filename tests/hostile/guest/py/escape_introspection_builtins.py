# The introspection and escape builtins are not there: globals, locals, vars, dir, breakpoint, input, exit, memoryview.
# expect: {"globals":"missing","locals":"missing","vars":"missing","dir":"missing","breakpoint":"missing","input":"missing","exit":"missing","memoryview":"missing"}
out = {}
probes = {
    "globals": lambda: globals,
    "locals": lambda: locals,
    "vars": lambda: vars,
    "dir": lambda: dir,
    "breakpoint": lambda: breakpoint,
    "input": lambda: input,
    "exit": lambda: exit,
    "memoryview": lambda: memoryview,
}
for name in ["globals", "locals", "vars", "dir", "breakpoint", "input", "exit", "memoryview"]:
    try:
        probes[name]()
        out[name] = "defined"
    except NameError:
        out[name] = "missing"
out
