// The block past --max-emitted-blocks is refused with an error naming the flag, which code can
// catch; the blocks before it stay in the answer.
// expect: {"sent":8,"error":"EmitLimit: emit(block): the answer has 8 content blocks already, the most it may (--max-emitted-blocks 8). Send fewer: combine images into one, or send the rest from a later execution."}
// expect-blocks: ["audio audio/wav 4","audio audio/wav 4","audio audio/wav 4","audio audio/wav 4","audio audio/wav 4","audio audio/wav 4","audio audio/wav 4","audio audio/wav 4"]
let sent = 0;
try {
  for (let i = 0; i < 9; i++) {
    await emit({ type: "audio", data: "UklGRg==", mimeType: "audio/wav" });
    sent++;
  }
} catch (error) {
  return { sent, error: error.message };
}
