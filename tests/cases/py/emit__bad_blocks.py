# Blocks that are not what they say are refused with what is wrong.
# expect: ["InvalidBlock: emit(block): \"data\" is not base64", "emit(block): block must be a dict like {\"type\": \"image\", \"data\": <base64>, \"mimeType\": \"image/png\"}, not str"]
errors = []
try:
    await emit({"type": "image", "data": "not base64!", "mimeType": "image/png"})
except Exception as e:
    errors.append(str(e).split(" (")[0])
try:
    await emit("a picture")
except TypeError as e:
    errors.append(str(e))
errors
