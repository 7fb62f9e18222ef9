// A flat string (join copies, no rope) that doubles until the heap is gone.
// expect-error: MemoryLimit
// expect-message: --memory-mb 32
let text = "x";
while (true) text = [text, text].join("");
