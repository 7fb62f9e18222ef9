// fetch, as in a browser: the answer says there is no network here, and how to find a tool that fetches.
// expect-error: GuestError
// expect-message: ReferenceError: fetch is not defined (fetch is not available: toolweave's sandbox has no modules, no network and no file system; the only way out of the sandbox is a tool call, tools.<server>.<tool>(...). searchTools("fetch a web page") finds tools by what they do)
const response: Response = await fetch("https://example.com/data.json");
const data = await response.json();
data;
