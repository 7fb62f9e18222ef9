// Retrying a refused destructive call gets the same refusal each time: nothing but the person
// running toolweave can change it, and the message says so.
// expect: {"refusals":3,"same":true,"codeCannot":true,"approve":true}
const messages = [];
for (let attempt = 0; attempt < 3; attempt++) {
  try {
    await tools.fixture.remove({ name: "draft" });
  } catch (error) {
    messages.push(error.message);
  }
}
return {
  refusals: messages.length,
  same: messages.every((message) => message === messages[0]),
  codeCannot: messages[0].includes("Neither code nor the model can change this"),
  approve: messages[0].includes("--approve fixture.remove"),
};
