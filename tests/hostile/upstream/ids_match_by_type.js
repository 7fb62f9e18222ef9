// An answer belongs to a call only when its id matches in JSON type and value: "7" does not
// answer request 7. On a stream the stray answer is dropped and the right one awaited; as the
// JSON body of a POST (f_json), where the body can only answer its request, the call fails naming
// the id. Answers to requests never made, and lines that are no message, are dropped.
// expect: []
const problems = [];
const expect = async (label, promise, check) => {
  const outcome = await promise.then((value) => ({ value }), (error) => ({ error: String(error.message) }));
  if (!check(outcome)) problems.push(`${label}: ${JSON.stringify(outcome)}`);
};
for (const server of ["f", "f_http", "f_sse"]) {
  await expect(`${server}.string_id`, tools[server].string_id({}), (o) => o.value === "right");
  await expect(`${server}.unknown_id`, tools[server].unknown_id({}), (o) => o.value === "right");
}
await expect("f.untied_then_ok", tools.f.untied_then_ok({}), (o) => o.value === "untied_then_ok");
await expect("f_json.string_id", tools.f_json.string_id({}),
  (o) => o.error !== undefined && o.error.includes("toolweave cannot read") && o.error.includes("id"));
return problems;
