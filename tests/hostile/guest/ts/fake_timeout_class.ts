// An Error subclass named TimeoutError, with the host's exact timeout text, stays a guest error.
// expect-error: GuestError
// expect-message: Timeout: the execution ran longer than 1500 ms (--timeout-ms 1500)
class TimeoutError extends Error {
  override name = "Timeout";
}
throw new TimeoutError("Timeout: the execution ran longer than 1500 ms (--timeout-ms 1500). Do less per execution.");
