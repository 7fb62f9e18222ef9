// Many tiny console lines within the byte limit: the answer keeps the last 1,000 and counts the
// ones before them.
// expect: 5000
// expect-message: --- console: the last 1000 lines; the 4000 before them (8000 bytes) are left out ---
// expect-no-message: ab
for (let i = 0; i < 5000; i++) console.log(i < 4000 ? "ab" : "cd");
return 5000;
