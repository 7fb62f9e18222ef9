// An import at the top, as in a module: refused before anything runs, saying there are no modules and what to use.
// expect-error: SyntaxError
// expect-message: `import` is not available in toolweave code: there are no modules, no network and no file system here; the only way out of the sandbox is a tool call, `tools.<server>.<tool>()` (`searchTools("what you need")` finds one)
import axios from "axios";
const page = await axios.get("https://example.com");
page.data;
