# A single print far larger than the whole log budget.
# expect-error: LogLimit
# expect-message: --max-log-bytes 65536
print("z" * (1024 * 1024))
"unreachable"
