# Tool arguments nested 200 lists deep: refused with an error the code can catch, not a cancellation.
# expect: "refused"
# pending: the worker's call message is deeper than serde_json's 128-level limit; the host kills the worker and reports "Cancelled: the client cancelled this execution"
deep = []
for i in range(200):
    deep = [deep]
try:
    await tools.fixture.echo(message=deep)
    outcome = "sent"
except (TypeError, RuntimeError):
    outcome = "refused"
outcome
