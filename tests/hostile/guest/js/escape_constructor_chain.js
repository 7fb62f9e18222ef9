// Climbing from a host-provided function to its constructor gives the guest's own Function, nothing of the host.
// expect: {"sameFunction":true,"sameGlobal":true,"hasProcess":false,"source":true}
const HostFunction = tools.fixture.add.constructor;
const global = HostFunction("return this")();
const AsyncFunction = (async () => {}).constructor;
return {
  sameFunction: HostFunction === Function && AsyncFunction("return 1") instanceof Function,
  sameGlobal: global === globalThis,
  hasProcess: "process" in global,
  source: !String(tools.fixture.add).includes("send("),
};
