# eval and exec are not available to run code built at run time.
# expect: {"eval":"NameError","exec":"NameError","compile":"NameError"}
outcome = {}
try:
    eval("__import__('os')")
    outcome["eval"] = "ran"
except NameError:
    outcome["eval"] = "NameError"
try:
    exec("import os")
    outcome["exec"] = "ran"
except NameError:
    outcome["exec"] = "NameError"
try:
    compile("1", "x", "eval")
    outcome["compile"] = "ran"
except NameError:
    outcome["compile"] = "NameError"
outcome
