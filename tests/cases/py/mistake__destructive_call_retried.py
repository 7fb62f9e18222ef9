# Retrying a refused destructive call gets the same refusal each time: code cannot change it.
# expect: {"refusals":3,"same":true,"code_cannot":true,"approve":true}
messages = []
for attempt in range(3):
    try:
        await tools.fixture.remove(name="draft")
    except RuntimeError as error:
        messages.append(str(error))
{
    "refusals": len(messages),
    "same": all(message == messages[0] for message in messages),
    "code_cannot": "Neither code nor the model can change this" in messages[0],
    "approve": "--approve fixture.remove" in messages[0],
}
