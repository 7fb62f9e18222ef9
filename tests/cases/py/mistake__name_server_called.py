# A server called as if it were a tool: the answer says so, and lists its tools (or says how to list them while the server starts).
# expect-error: GuestError
# expect-message: TypeError: 'tools.alpha' object is not callable (tools.alpha is a server, not a tool: call one of its tools, as tools.alpha.<tool>(...).
await tools.alpha(a=1, b=2)
