# The os module that exists gives no process, file or environment access.
# expect: {"system":"refused","environ":"refused","getenv":"refused","listdir":"refused"}
import os

outcome = {}
attempts = {
    "system": lambda: os.system("id"),
    "environ": lambda: os.environ["FIXTURE_SECRET"],
    "getenv": lambda: os.getenv("FIXTURE_SECRET"),
    "listdir": lambda: os.listdir("/"),
}
for name in ["system", "environ", "getenv", "listdir"]:
    try:
        attempts[name]()
        outcome[name] = "allowed"
    except (PermissionError, AttributeError, NameError):
        outcome[name] = "refused"
outcome
