// .raw gives the whole CallToolResult, for images and resources.
// expect: {"type":"image","mimeType":"image/png","isError":false}
const raw = await tools.fixture.image.raw({});
return { type: raw.content[0].type, mimeType: raw.content[0].mimeType, isError: raw.isError ?? false };
