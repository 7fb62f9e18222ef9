# One long built-in call (max over a huge range) that runs no Python instructions between its steps.
# expect-error: Timeout
# expect-message: --timeout-ms 1500
max(range(10**15))
