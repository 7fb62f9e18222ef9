// The 10,001st pending timer ends the execution naming the cap; it used to be dropped, and the
// program then ended as NeverSettles, blaming its own promises.
// expect-error: TimerLimit
// expect-message: more than 10000 timers (setTimeout) pending at once
await Promise.all(Array.from({ length: 10001 }, () => new Promise((done) => setTimeout(done, 10))));
