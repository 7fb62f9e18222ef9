# A value past --max-result-bytes kept behind a handle, and read back in a piece (a result that
# large becomes a handle the same way: see the protocol tests).
# expect: [2097154, "string(2097152)", "yy", true]
kept = await handle("y" * (2 * 1024 * 1024))
piece = await results.get(kept["handle"], offset=2 * 1024 * 1024 - 2)
[kept["bytes"], kept["shape"], piece, kept["preview"].startswith('"yyy')]
