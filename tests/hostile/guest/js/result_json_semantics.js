// undefined is left out of objects and sent as null in arrays, as JSON.stringify does; a symbol, which JSON has no form for, is refused where it is, not dropped.
// expect-error: Unserializable
// expect-message: result.list[1] is a symbol: send String(symbol)
return {
  nothing: undefined,
  list: [undefined, Symbol("t")],
};
