# The refusal advises an approve rule for this one tool (and the settings key), never an allow
# rule; the other tools of the server keep working after it.
# expect: {"kind":"RuntimeError","approve":true,"settings":true,"allow":false,"sum":"3"}
message = ""
kind = ""
try:
    await tools.fixture.remove(name="draft")
except Exception as error:
    message = str(error)
    kind = type(error).__name__
{
    "kind": kind,
    "approve": "--approve fixture.remove" in message,
    "settings": '"approve" in its settings file' in message,
    "allow": "--allow" in message,
    "sum": await tools.fixture.add(a=1, b=2),
}
