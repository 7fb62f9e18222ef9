// A loop that swallows every error in catch and restarts from finally cannot outlive the deadline.
// expect-error: Timeout
// expect-message: --timeout-ms 1500
for (;;) {
  try {
    for (;;) {}
  } catch (error) {
    // swallow
  } finally {
    continue;
  }
}
