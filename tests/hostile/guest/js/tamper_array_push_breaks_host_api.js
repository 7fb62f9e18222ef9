// Array.prototype.push and indexOf trapped: console.log of objects, describeTools and setTimeout's extra arguments must still work.
// expect: {"described":true,"timer":"a-b"}
// expect-logs: ["{\"a\":[1,{\"b\":2}]}"]
const trap = function () { throw new Error("trapped"); };
Array.prototype.push = trap;
Array.prototype.indexOf = trap;
console.log({ a: [1, { b: 2 }] });
const described = JSON.stringify(await describeTools(["fixture.add"])).includes("add(");
const timer = await new Promise((resolve) => setTimeout((a, b) => resolve(a + "-" + b), 1, "a", "b"));
return { described, timer };
