# 10 MB of print output ends the execution.
# expect-error: LogLimit
# expect-message: --max-log-bytes
line = "x" * 1000
for i in range(10000):
    print(line)
