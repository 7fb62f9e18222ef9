# An async function awaiting itself without end.
# expect-error: StackOverflow
# expect-message: --stack-kb
async def down(n):
    return await down(n + 1) + 1


await down(0)
