// A call the server never answers times out at --tool-timeout-ms (2 s here) and says where the
// time went; a server that stopped reading its input is named as such, not as a slow server.
// expect: []
const problems = [];
const outcome = (promise) => promise.then((v) => "resolved " + JSON.stringify(v), (e) => String(e.message));
const silent = await outcome(tools.f.silent({}));
if (!silent.includes('server "f" did not answer the call to "silent" within 2000 ms (--tool-timeout-ms)')
    || !silent.includes("ms from when the call was sent (toolweave sent it")) problems.push("silent: " + silent);
// `deaf` stops the server reading its input; a call too large for the pipe then cannot be sent.
await outcome(tools.deaf.deaf({}));
const unsent = await outcome(tools.deaf.ok({ text: "x".repeat(4 << 20) }));
if (!unsent.includes('server "deaf" did not take the call to "ok" within 2000 ms (--tool-timeout-ms)')
    || !unsent.includes("stopped reading its input")) problems.push("deaf: " + unsent);
return problems;
