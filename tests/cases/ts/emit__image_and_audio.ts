// emit(block) adds image and audio blocks to the answer, after its text, in order; an image a
// tool returned goes in as it came; emit resolves to null.
// expect: [null,null,null]
// expect-blocks: ["image image/png 68","audio audio/wav 4","text a caption"]
const [shot] = await tools.fixture.image({});
const emitted = [
  await emit(shot),
  await emit({ type: "audio", data: "UklGRg==", mimeType: "audio/wav" }),
  await emit({ type: "text", text: "a caption" }),
];
const shot2 = (await tools.fixture.image.raw({})).content[0];
// A block inside another value is data; one returned alone goes in the answer.
if (typeof shot2.data !== "string") throw new Error("the raw result's image has its data");
emitted
