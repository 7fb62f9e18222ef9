# A tool named without its server: the answer says how to name tools and which ones come close.
# also-while-starting
# expect-error: GuestError
# expect-message: RuntimeError: unknown tool "add": name a tool as "server.tool"; did you mean alpha.add, beta.add, fixture.add? The servers are alpha, beta, fixture.
await tools.add(a=1, b=2)
