# emit(block) adds image and audio blocks to the answer, in order; emit returns None. A tool's
# image returned as it came goes in as a block too, and the value describes it.
# expect: {"type": "image", "mimeType": "image/png", "bytes": 68}
# expect-blocks: ["image image/png 68","audio audio/wav 4","image image/png 68"]
shot = await tools.fixture.image()
emitted = [
    await emit(shot[0]),
    await emit({"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}),
]
assert emitted == [None, None]
raw = await call_tool("fixture.image", raw=True)
raw["content"][0]
