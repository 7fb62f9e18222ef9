// The refusal advises an approve rule for this one tool (and the settings key), never an allow
// rule; the other tools of the server keep working after it.
// expect: {"approve":true,"settings":true,"allow":false,"sum":"3"}
let message = "";
try {
  await tools.fixture.remove({ name: "draft" });
} catch (error) {
  message = error.message;
}
return {
  approve: message.includes("--approve fixture.remove"),
  settings: message.includes('"approve" in its settings file'),
  allow: message.includes("--allow"),
  sum: await tools.fixture.add({ a: 1, b: 2 }),
};
