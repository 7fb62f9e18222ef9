# Tool arguments nested 200 lists deep: refused with an error the code can catch, not a cancellation.
# expect: "refused"
deep = []
for i in range(200):
    deep = [deep]
try:
    await tools.fixture.echo(message=deep)
    outcome = "sent"
except (TypeError, RuntimeError):
    outcome = "refused"
outcome
