// The tool's name as its server spells it (get-sum), in brackets: it is the same tool, whether the server is up yet or not.
// also-while-starting
// expect: {"dashed":"5","guest":"5"}
const dashed = await tools.fixture["get-sum"]({ a: 2, b: 3 });
const guest = await tools.fixture.get_sum({ a: 2, b: 3 });
return { dashed, guest };
