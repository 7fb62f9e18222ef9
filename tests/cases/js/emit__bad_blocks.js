// Blocks that are not what they say are refused, each with what is wrong, and nothing is added.
// expect: ["InvalidBlock: emit(block): \"data\" is not base64","InvalidBlock: emit(block): an image block needs \"mimeType\", such as \"image/png\"","InvalidBlock: emit(block): the mimeType of an audio block begins with \"audio/\", and this one is \"image/png\"","InvalidBlock: emit(block): toolweave does not pass on blocks of type \"video\"","InvalidBlock: emit(block): the block has a field \"alt\" toolweave does not pass on; its fields are type, data, mimeType, annotations, _meta","emit(block): block must be an object like {type: \"image\", data: <base64>, mimeType: \"image/png\"}, got a picture"]
const blocks = [
  { type: "image", data: "not base64!", mimeType: "image/png" },
  { type: "image", data: "iVBORw==" },
  { type: "audio", data: "UklGRg==", mimeType: "image/png" },
  { type: "video", data: "" },
  { type: "image", data: "iVBORw==", mimeType: "image/png", alt: "x" },
  "a picture",
];
const errors = [];
for (const block of blocks) {
  try {
    await emit(block);
  } catch (error) {
    errors.push(error.message.split(" (")[0].split(". A block")[0]);
  }
}
errors
