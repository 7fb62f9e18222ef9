// expect-error: ResultTooLarge
// expect-message: --max-result-bytes
"y".repeat(2 * 1024 * 1024)
