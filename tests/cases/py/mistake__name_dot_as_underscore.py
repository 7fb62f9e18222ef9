# call_tool with an underscore where the dot goes: the answer says how to name a tool and which comes close.
# also-while-starting
# expect-error: GuestError
# expect-message: unknown tool "fixture_echo": name a tool as "server.tool"; did you mean alpha.echo, beta.echo, fixture.echo?
await call_tool("fixture_echo", {"message": "hi"})
