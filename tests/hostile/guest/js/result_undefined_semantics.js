// undefined is left out of objects and sent as null in arrays, as JSON.stringify does.
// expect: {"list":[null,1]}
return { nothing: undefined, list: [undefined, 1] };
