# The same faults from Python: each fails its call at once with the server's name and the fault,
# and the server keeps serving.
# expect: []
problems = []
faults = {
    "truncated": "invalid JSON (EOF while parsing",
    "invalid_utf8": "invalid UTF-8 at byte",
    "jsonrpc_1": 'not JSON-RPC 2.0 (its "jsonrpc" is "1.0")',
}
for server in ["f", "f_http"]:
    for tool, fault in faults.items():
        try:
            value = await call_tool(f"{server}.{tool}", {})
            problems.append(f"{server}.{tool} resolved with {value}")
        except RuntimeError as error:
            message = str(error)
            if fault not in message or f'server "{server}"' not in message:
                problems.append(f"{server}.{tool}: {message}")
    if await call_tool(f"{server}.ok", {}) != "ok":
        problems.append(f"{server}.ok failed after the faults")
problems
