// An upstream answer toolweave cannot read fails its own call at once, names the server and what
// is wrong, and the server keeps serving: on stdio (f), streamable HTTP with event streams
// (f_http) and JSON bodies (f_json), and legacy SSE (f_sse). The tool timeout is 2 s: an answer
// that came from a timeout would take that long.
// expect: []
const faults = {
  truncated: "invalid JSON (EOF while parsing",
  invalid_utf8: "invalid UTF-8 at byte",
  deep_result: "a message nested 130 levels deep, deeper than the 100 toolweave reads",
  error_without_message: "a JSON-RPC error without a message",
  jsonrpc_1: 'not JSON-RPC 2.0 (its "jsonrpc" is "1.0")',
  bad_result: "an answer to tools/call that is not a tool result",
};
const problems = [];
for (const server of ["f", "f_http", "f_json", "f_sse"]) {
  for (const [tool, fault] of Object.entries(faults)) {
    const started = Date.now();
    const outcome = await tools[server][tool]({}).then(
      (value) => "resolved with " + JSON.stringify(value),
      (error) => String(error.message),
    );
    const took = Date.now() - started;
    const named = outcome.includes(`server "${server}" answered the call to "${tool}" with a message toolweave cannot read`)
      && outcome.includes(fault);
    if (!named) problems.push(`${server}.${tool}: ${outcome}`);
    if (took > 1000) problems.push(`${server}.${tool}: answered after ${took} ms`);
  }
  const ok = await tools[server].ok({});
  if (ok !== "ok") problems.push(`${server}.ok after the faults: ${JSON.stringify(ok)}`);
}
return problems;
