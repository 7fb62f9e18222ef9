# Catching everything around each call does not get past the budget of 50.
# expect-error: ToolCallLimit
# expect-message: --max-tool-calls 50
made = 0
for i in range(1000):
    try:
        await tools.fixture.add(a=i, b=1)
        made += 1
    except BaseException:
        pass
made
