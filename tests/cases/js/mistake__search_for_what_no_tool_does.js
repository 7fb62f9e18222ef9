// Searching for what no configured tool does: the closest tools come back marked weak, so the
// program (and the model) can tell that nothing fits instead of calling the first hit; a query a
// tool answers gets unmarked hits.
// expect: {"found":true,"allWeak":true,"strong":"alpha.add","strongMarked":false}
// also-while-starting
const hits = await searchTools("send an email with the weather to my boss");
const strong = await searchTools("add two numbers", 1);
return {
  found: hits.length > 0,
  allWeak: hits.every((hit) => hit.weak === true),
  strong: strong[0].name,
  strongMarked: "weak" in strong[0],
};
