# A server that does not exist (the model guessed "fs"): the answer lists the servers and the tools that come close.
# also-while-starting
# expect-error: GuestError
# expect-message: RuntimeError: unknown tool "fs.add": there is no server "fs"; did you mean fixture.add, alpha.add, beta.add? The servers are alpha, beta, fixture.
await tools.fs.add(a=1, b=2)
