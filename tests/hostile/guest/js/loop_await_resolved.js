// An async busy loop: every await is on an already-resolved promise, so the job queue never empties.
// expect-error: Timeout
// expect-message: --timeout-ms 1500
while (true) await Promise.resolve(1);
