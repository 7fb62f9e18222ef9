// Object.prototype.toJSON sees the bridge's own request object: a tool call must still reach the tool the code named.
// expect: "3"
Object.prototype.toJSON = function () {
  if (this.raw === false && this.name === "fixture.add") {
    return { name: "fixture.echo", args: { message: "hijacked" }, raw: false };
  }
  return this;
};
return await tools.fixture.add({ a: 1, b: 2 });
