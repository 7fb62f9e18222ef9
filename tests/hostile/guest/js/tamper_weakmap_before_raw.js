// Every tool function inherits `raw` from one frozen prototype, made with the WeakMap methods the
// prelude captured before the guest ran: replacing them changes nothing, one tool has one `raw`,
// and a `raw` got for a made-up `this` calls no more than callMCPTool could.
// expect: {"same":true,"frozen":[true,true],"sum":"3","forged":"Rejected"}
WeakMap.prototype.get = () => async () => "forged";
WeakMap.prototype.set = () => { throw new Error("reached the guest's set"); };
const add = tools.fixture.add;
const same = add.raw === add.raw;
const frozen = [Object.isFrozen(add), Object.isFrozen(Object.getPrototypeOf(add))];
const result = await add.raw({ a: 1, b: 2 });
const getter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(add), "raw").get;
let forged;
try {
  await getter.call({ name: "fixture.no_such_tool" })({});
  forged = "called";
} catch (error) {
  forged = String(error.message).includes("no_such_tool") ? "Rejected" : String(error.message);
}
return { same, frozen, sum: result.content[0].text, forged };
