// Caught as `unknown`, the refusal is an Error whose message carries the advice.
// expect: {"isError":true,"approve":true,"allow":false}
let caught: unknown;
try {
  await tools.fixture.remove({ name: "draft" });
} catch (error: unknown) {
  caught = error;
}
const message = caught instanceof Error ? caught.message : String(caught);
return {
  isError: caught instanceof Error,
  approve: message.includes("--approve fixture.remove"),
  allow: message.includes("--allow"),
};
