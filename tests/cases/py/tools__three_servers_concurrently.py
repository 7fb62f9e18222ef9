# Calls to three servers at once; each answers with its own server name.
# expect: {"total":21,"echoes":["alpha","beta","fixture"]}
a, b, c = await asyncio.gather(
    tools.alpha.add(a=1, b=2),
    tools.beta.add(a=3, b=4),
    tools.fixture.add(a=5, b=6),
)
echoes = await asyncio.gather(*[server.whoami() for server in [tools.alpha, tools.beta, tools.fixture]])
{"total": int(a) + int(b) + int(c), "echoes": echoes}
