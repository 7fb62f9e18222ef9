// Arguments are validated against the tool's inputSchema before the call; each violation is named.
// expect: {"path":true,"missing":true,"signature":true}
try {
  await tools.fixture.add({ a: "two" } as any);
  return "no error";
} catch (error) {
  const message = String((error as Error).message);
  return {
    path: message.includes("/a"),
    missing: message.includes("\"b\" is a required property"),
    signature: message.includes("tools.fixture.add("),
  };
}
