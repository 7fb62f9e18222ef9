// Nothing of Node, Deno, Bun, browsers or quickjs-libc is there: no process, require, fetch, std, os, WebAssembly.
// expect: {"process":"undefined","require":"undefined","module":"undefined","fetch":"undefined","XMLHttpRequest":"undefined","WebSocket":"undefined","Deno":"undefined","Bun":"undefined","std":"undefined","os":"undefined","scriptArgs":"undefined","print":"undefined","WebAssembly":"undefined","importScripts":"undefined","Worker":"undefined"}
const names = ["process", "require", "module", "fetch", "XMLHttpRequest", "WebSocket", "Deno", "Bun", "std", "os", "scriptArgs", "print", "WebAssembly", "importScripts", "Worker"];
const seen = {};
for (const name of names) seen[name] = typeof globalThis[name];
return seen;
