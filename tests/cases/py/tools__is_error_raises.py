# An upstream isError result raises RuntimeError naming server and tool, which code can catch.
# expect: {"caught":true,"mentionsTool":true,"mentionsReason":true}
try:
    await tools.fixture.fail(message="disk on fire")
    result = {"caught": False}
except RuntimeError as error:
    result = {
        "caught": True,
        "mentionsTool": "fixture.fail" in str(error),
        "mentionsReason": "disk on fire" in str(error),
    }
result
