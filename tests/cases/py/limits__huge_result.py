# expect-error: ResultTooLarge
# expect-message: --max-result-bytes
"y" * (2 * 1024 * 1024)
