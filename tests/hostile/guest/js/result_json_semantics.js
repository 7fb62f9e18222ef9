// Functions, symbols and undefined are dropped and NaN/Infinity become null, as JSON.stringify does.
// expect: {"list":[null,null,null,null],"nan":null,"inf":null}
return {
  fn() { return 1; },
  sym: Symbol("s"),
  nothing: undefined,
  list: [() => 1, Symbol("t"), undefined, NaN],
  nan: NaN,
  inf: -Infinity,
};
