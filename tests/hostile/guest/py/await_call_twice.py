# Awaiting one tool-call coroutine 60 times makes one call (no budget overrun, no ToolCallLimit), each await giving its value.
# expect: 180
pending = tools.fixture.add(a=1, b=2)
total = 0
for i in range(60):
    total += int(await pending)
total
