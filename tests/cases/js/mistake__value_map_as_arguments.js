// A Map as a tool's arguments: sent as the object it holds.
// expect: "5"
return await tools.fixture.add(new Map([["a", 2], ["b", 3]]));
