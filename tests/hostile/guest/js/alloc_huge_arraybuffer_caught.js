// One huge ArrayBuffer, refused; catching the error does not buy more room.
// expect-error: MemoryLimit
// expect-message: --memory-mb 32
try {
  new ArrayBuffer(1024 * 1024 * 1024);
} catch (error) {
  // pretend nothing happened
}
return "survived";
