# Many empty prints: every newline counts against the log budget.
# expect-error: LogLimit
# expect-message: --max-log-bytes 65536
for i in range(200000):
    print()
"done"
