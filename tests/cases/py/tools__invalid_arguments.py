# Arguments are validated against the tool's inputSchema before the call, with the same message as
# from JavaScript: each violation with its path, and the signature (in Python).
# expect: {"type":"RuntimeError","path":true,"missing":true,"signature":true}
try:
    await tools.fixture.add(a="two")
    result = "no error"
except RuntimeError as error:
    message = str(error)
    result = {
        "type": type(error).__name__,
        "path": "/a" in message,
        "missing": '"b" is a required property' in message,
        "signature": "tools.fixture.add(*, a: float, b: float) -> Any" in message,
    }
result
