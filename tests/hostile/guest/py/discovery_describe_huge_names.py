# Names of 200 KB are no tool's: refused before any edit distance is computed.
# expect-error: GuestError
# expect-message: a tool name is at most 512 bytes, and name 1 of this request is 200001 bytes (it begins "xxxxxxxxxx
await describe_tools(["x" * 200000 + str(i % 10) for i in range(40)])
