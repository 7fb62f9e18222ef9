// A getter on the result that never returns: the host converting the result must still stop at the deadline.
// expect-error: Timeout
// expect-message: --timeout-ms 1500
return { get trap() { for (;;) {} } };
