# A large tool result within the memory limit (12 MiB against 32 MiB) reaches the code whole,
# and the other executions go on meanwhile.
# expect: 12582912
len(await tools.fixture.large(bytes=12582912))
