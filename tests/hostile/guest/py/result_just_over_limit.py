# A value one byte over --max-result-bytes (1048576), 1048575 characters plus two quotes, is kept
# behind a handle whose description stays small, and reads back whole. (A result that large
# becomes a handle the same way: see the protocol tests.)
# expect: [1048577, true, true]
kept = await handle("r" * 1048575)
back = await results.get(kept["handle"])
[kept["bytes"], back == "r" * 1048575, len(str(kept)) < 1000]
