// An upstream isError result rejects with an Error naming server and tool.
// expect: {"caught":true,"mentionsTool":true,"mentionsReason":true}
try {
  await tools.fixture.fail({ message: "disk on fire" });
  return { caught: false };
} catch (error) {
  const message = (error as Error).message;
  return {
    caught: error instanceof Error,
    mentionsTool: message.includes("fixture.fail"),
    mentionsReason: message.includes("disk on fire"),
  };
}
