// Tool arguments nested 101 arrays deep are refused in the guest, naming the bound; nothing is
// sent.
// expect: "invalid arguments to a tool call: arrays and objects nest more than 100 levels deep in the arguments, which cannot be sent as JSON; flatten the data"
let deep = [];
for (let i = 0; i < 101; i++) deep = [deep];
try {
  await tools.fixture.echo({ message: deep });
  return "sent";
} catch (error) {
  return error.message;
}
