// The only non-standard globals are the documented guest API; Function("return this") and indirect eval see the same global.
// expect: {"extra":["callMCPTool","clearTimeout","console","describeTools","emit","handle","llm","progress","prompts","resources","results","searchTools","setTimeout","store","tools"],"sameGlobal":[true,true]}
const standard = new Set([
  "Object", "Function", "Array", "Number", "parseFloat", "parseInt", "Infinity", "NaN", "undefined",
  "Boolean", "String", "Symbol", "Date", "Promise", "RegExp", "Error", "AggregateError", "EvalError",
  "RangeError", "ReferenceError", "SyntaxError", "TypeError", "URIError", "globalThis", "JSON", "Math",
  "Intl", "DOMException", "atob", "btoa", "ArrayBuffer", "SharedArrayBuffer", "Atomics", "Uint8Array", "Int8Array", "Uint8ClampedArray",
  "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "Float16Array", "Float32Array", "Float64Array",
  "BigInt64Array", "BigUint64Array", "DataView", "Map", "BigInt", "Set", "WeakMap", "WeakSet", "WeakRef",
  "FinalizationRegistry", "Proxy", "Reflect", "decodeURI", "decodeURIComponent", "encodeURI",
  "encodeURIComponent", "escape", "unescape", "eval", "isFinite", "isNaN", "Iterator", "performance",
  "queueMicrotask", "structuredClone", "InternalError", "DisposableStack", "AsyncDisposableStack",
  "SuppressedError", "Performance", "URL", "URLSearchParams", "TextEncoder", "TextDecoder", "crypto",
]);
const extra = Object.getOwnPropertyNames(globalThis).filter((name) => !standard.has(name)).sort();
const viaFunction = Function("return this")();
const viaEval = (0, eval)("this");
return { extra, sameGlobal: [viaFunction === globalThis, viaEval === globalThis] };
