# The block past --max-emitted-blocks raises, naming the flag; code can catch it.
# expect: {"sent": 8, "error": "EmitLimit: emit(block): the answer has 8 content blocks already, the most it may (--max-emitted-blocks 8). Send fewer: combine images into one, or send the rest from a later execution."}
# expect-blocks: ["text 0","text 1","text 2","text 3","text 4","text 5","text 6","text 7"]
sent = 0
error = None
try:
    for i in range(9):
        await emit({"type": "text", "text": str(i)})
        sent += 1
except Exception as e:
    error = str(e)
{"sent": sent, "error": error}
