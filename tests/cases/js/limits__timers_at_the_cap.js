// 10,000 timers pending at once are within the cap, and a timer that fired makes room for another.
// expect: 10001
let fired = 0;
for (let i = 0; i < 9999; i++) setTimeout(() => fired++, 1);
await new Promise((done) => setTimeout(done, 2));
await new Promise((done) => setTimeout(done, 1));
fired + 2
