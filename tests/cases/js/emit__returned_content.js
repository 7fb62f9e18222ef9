// A tool's content array returned as it came: its image goes in the answer as a block, and
// the value describes it instead of carrying its base64.
// expect: [{"type":"image","mimeType":"image/png","bytes":68}]
// expect-blocks: ["image image/png 68"]
// expect-no-message: iVBORw0KGgo
return await tools.fixture.image({});
