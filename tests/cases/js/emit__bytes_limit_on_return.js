// A returned image past --max-emitted-bytes fails the execution with the flag named (nothing
// could catch it any more); the block emitted before it is still in the answer.
// expect-error: EmitLimit
// expect-message: --max-emitted-bytes 4194304
// expect-blocks: ["audio audio/wav 3145728"]
const big = "A".repeat(4 * 1024 * 1024);
await emit({ type: "audio", data: big, mimeType: "audio/wav" });
return { type: "image", data: "AAAA".repeat(1024 * 256), mimeType: "image/png" };
