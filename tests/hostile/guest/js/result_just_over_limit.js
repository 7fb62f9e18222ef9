// A result one byte over --max-result-bytes (1048576): 1048575 characters plus two quotes.
// expect-error: ResultTooLarge
// expect-message: the result is 1048577 bytes
// expect-message: --max-result-bytes 1048576
return "r".repeat(1048575);
