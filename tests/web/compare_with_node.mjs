// Compares toolweave's web.js (the path given) with Node's own URL, URLSearchParams,
// TextEncoder, TextDecoder and Intl number formatting, over the inputs below and 20,000 random
// numbers; prints each difference and ends with "fails N". Run by the CLI's suite::web test.
import { readFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
const source = readFileSync(process.argv[2], "utf8");
const web = await import("data:text/javascript," + encodeURIComponent(source));
const w = web.make((n) => new Uint8Array(randomBytes(n)));
const props = ["href","origin","protocol","username","password","host","hostname","port","pathname","search","hash"];
const cases = [
 ["https://example.com"], ["HTTPS://EXAMPLE.com:443/a/b/../c/./d?x=1&y=2#frag"], ["http://user:pa ss@host:8080/p a t h?q=a b#f g"],
 ["http://example.com/ä?ü=ö#ß"], ["mailto:someone@example.com"], ["data:text/plain,hello world"], ["file:///etc/passwd"],
 ["file://localhost/tmp/x"], ["custom://host/path?q"], ["urn:isbn:123"], ["http://[::1]:80/"], ["http://127.1/"], ["http://0x7f.0.0.1"],
 ["../x?y#z", "http://a/b/c/d;p?q"], ["g", "http://a/b/c/d;p?q"], ["./g", "http://a/b/c/d;p?q"], ["g/", "http://a/b/c/d;p?q"],
 ["/g", "http://a/b/c/d;p?q"], ["//g", "http://a/b/c/d;p?q"], ["?y", "http://a/b/c/d;p?q"], ["g?y", "http://a/b/c/d;p?q"],
 ["#s", "http://a/b/c/d;p?q"], ["", "http://a/b/c/d;p?q"], ["../..", "http://a/b/c/d;p?q"], ["../../../g", "http://a/b/c/d;p?q"],
 ["http:g", "http://a/b/c/d;p?q"], ["\\\\server\\share", "http://a/"], ["http:\\\\host\\p"], ["  http://x.com/  "], ["http://x.com/a%2e%2E/b"],
 ["https://example.com/?q=%20a+b&r=ü"], ["ws://h:80/"], ["wss://h:443/x"], ["ftp://h:21/"], ["http://h:0080/"], ["http://a.b/"+"x?a='b'"],
 ["non-spec:/.//p"], ["sc://ñ.com/"], ["http://example.com/path?a=1#"], ["http://example.com/path?"], ["https://api.github.com/repos/o/r/issues?state=open&per_page=100"],
 ["/api/v1/items?limit=10", "https://example.com/base/"], ["items/3", "https://example.com/base/"], ["http://h/`{}"], ["HTTP://user@Host.COM"],
];
const bad = [["foo"], ["http://"], ["http://h:99999/"], ["http://a b/"], ["https://ex ample.com"], ["http://[::1/"], ["//x"], ["http://h:12a/"]];
let fails = 0;
for (const [u, b] of cases) {
  let mine, theirs;
  try { mine = new w.URL(u, b); } catch (e) { mine = e.message; }
  try { theirs = new URL(u, b); } catch (e) { theirs = e.message; }
  if (typeof theirs === "string" || typeof mine === "string") { if (typeof mine !== typeof theirs) { fails++; console.log("DIFF throw", u, b, mine, theirs); } continue; }
  for (const p of props) if (mine[p] !== theirs[p]) { fails++; console.log("DIFF", JSON.stringify(u), b, p, JSON.stringify(mine[p]), JSON.stringify(theirs[p])); }
  if (JSON.stringify([...mine.searchParams]) !== JSON.stringify([...theirs.searchParams])) { fails++; console.log("DIFF params", u); }
}
for (const [u, b] of bad) {
  let ok = w.URL.canParse(u, b), nok = URL.canParse(u, b);
  if (ok !== nok) { fails++; console.log("DIFF canParse", u, ok, nok); }
}
// setters
for (const [prop, value] of [["search","?a=1 2"],["hash","x y"],["pathname","/a b/../c"],["port","8080"],["hostname","Other.COM"],["host","h2:99"],["username","u s"],["password","p@"],["protocol","http"],["href","https://z.com/q"],["search",""],["port",""]]) {
  const a = new w.URL("https://user@example.com:444/p/q?x=1#h"), c = new URL("https://user@example.com:444/p/q?x=1#h");
  a[prop] = value; c[prop] = value;
  if (a.href !== c.href) { fails++; console.log("DIFF set", prop, value, a.href, c.href); }
}
// searchParams
const sp = new w.URLSearchParams("a=1&b=2&a=3&c=%20x+y&d=%E2%82%AC"), np = new URLSearchParams("a=1&b=2&a=3&c=%20x+y&d=%E2%82%AC");
for (const op of [(p)=>p.append("e","f g&h"), (p)=>p.delete("b"), (p)=>p.set("a","z"), (p)=>p.sort(), (p)=>p.append("ü","€~*'()!")]) { op(sp); op(np); if (sp.toString() !== np.toString()) { fails++; console.log("DIFF sp", sp.toString(), np.toString()); } }
const u = new w.URL("https://e.com/p?a=1"); u.searchParams.append("b", "two words"); const n = new URL("https://e.com/p?a=1"); n.searchParams.append("b", "two words");
if (u.href !== n.href) { fails++; console.log("DIFF linked", u.href, n.href); }
u.searchParams.delete("a"); u.searchParams.delete("b"); n.searchParams.delete("a"); n.searchParams.delete("b"); if (u.href !== n.href) { fails++; console.log("DIFF linked2", u.href, n.href); }
// text
const te = new w.TextEncoder(), nte = new TextEncoder();
for (const s of ["", "abc", "héllo €", "😀", "\ud800x", "a\udc00"]) { if (String(te.encode(s)) !== String(nte.encode(s))) { fails++; console.log("DIFF enc", s); } }
const td = new w.TextDecoder(), ntd = new TextDecoder();
for (const b of [[], [104,105], [0xef,0xbb,0xbf,65], [0xe2,0x82,0xac], [0xf0,0x9f,0x98,0x80], [0xff, 65], [0xe2, 0x82], [0xed,0xa0,0x80], [0xc0, 0x80], [0xf4,0x90,0x80,0x80], [0xe2,0x28,0xa1]]) {
  const x = td.decode(new Uint8Array(b)), y = ntd.decode(new Uint8Array(b)); if (x !== y) { fails++; console.log("DIFF dec", b, JSON.stringify(x), JSON.stringify(y)); }
}
const buf = new Uint8Array(4); const r = te.encodeInto("a€b", buf), r2 = nte.encodeInto("a€b", new Uint8Array(4)); if (JSON.stringify(r) !== JSON.stringify(r2)) { fails++; console.log("DIFF into", r, r2); }
// clone
const d = new Date(5); const src = { a: [1, { b: d }], m: new Map([["k", new Set([1, 2])]]), t: new Uint16Array([1, 2]), re: /x/gi, e: new RangeError("bad") }; src.self = src;
const cl = w.structuredClone(src);
const cloned = [cl !== src, cl.self === cl, cl.a[1].b instanceof Date, cl.a[1].b.getTime() === 5, cl.a[1].b !== d, cl.m.get("k").has(2), cl.t instanceof Uint16Array, cl.t[1] === 2, String(cl.re) === "/x/gi", cl.e instanceof RangeError, cl.e.message === "bad"];
if (cloned.includes(false)) { fails++; console.log("DIFF clone", cloned); }
try { w.structuredClone({ f() {} }); fails++; console.log("DIFF clone of a function"); } catch (e) { if (e.name !== "DataCloneError") { fails++; console.log("DIFF", e.name); } }
if (!/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(w.crypto.randomUUID())) { fails++; console.log("DIFF uuid"); }
const more = [["file:///C:/x"],["file://h/x/../y"],["http://a/b?c#d#e"],["http://a/%zz"],["http://a/?%zz"],["sc:x/../y"],["sc:/x/../y"],["http://h/?a=b'c"],["sc://h/?a='b'"],["http://%41.com/"],["http://a.com./"],["http://1.2.3.4.5/"],["http://256.0.0.1/"],["http://h/a?b=c d"],["https://ex.com:443"],["javascript:alert(1)"],["about:blank"],["blob:https://a.com/uuid"],["http://a/b/c/d;p?q", "ftp://x/"],["..", "file:///a/b/c"],["x", "mailto:a@b"],["#x", "mailto:a@b"],["HTTP://A/B"],["http://a:@b/"],["http://:p@b/"],["sc://@h"],["sc://"],["sc:"],["http://h/\\x\\y"]];
let f2=0;
for (const [u, b] of more) {
  let mine, theirs;
  try { mine = new w.URL(u, b); } catch (e) { mine = e.message; }
  try { theirs = new URL(u, b); } catch (e) { theirs = e.message; }
  if (typeof theirs === "string" || typeof mine === "string") { if (typeof mine !== typeof theirs) { f2++; console.log("DIFF throw", u, b, mine, String(theirs)); } continue; }
  for (const p of props) if (mine[p] !== theirs[p]) { f2++; console.log("DIFF", JSON.stringify(u), b, p, JSON.stringify(mine[p]), JSON.stringify(theirs[p])); }
}
const saved = Number.prototype.toLocaleString;
const numbers = [[1234567.891], [-0.5], [1000], [0.12345], [NaN], [-0.0001], [1234.5, { minimumFractionDigits: 2 }], [1234.5678, { maximumFractionDigits: 2 }], [0.256, { style: "percent" }], [0.2567, { style: "percent", maximumFractionDigits: 1 }], [-1234.5, { style: "currency", currency: "USD" }], [1234567, { useGrouping: false }], [2.5, { maximumFractionDigits: 0 }], [1.005, { minimumFractionDigits: 2, maximumFractionDigits: 2 }], [12, {minimumFractionDigits: 1, maximumFractionDigits: 3}], [Infinity]];
const expected = numbers.map(([n, o]) => saved.call(n, "en-US", o));
web.default({ randomBytes: (n) => new Uint8Array(n), promiseMisread: "x" });
let numberFails = 0;
numbers.forEach(([n, o], i) => { const got = n.toLocaleString(undefined, o); if (got !== expected[i]) { numberFails++; console.log("DIFF", n, o, got, expected[i]); } });
for (const attempt of [() => (5).toLocaleString("de-DE"), () => (5).toLocaleString("en-US", { style: "currency", currency: "EUR" }), () => (5).toLocaleString(undefined, { notation: "compact" })]) { try { attempt(); numberFails++; console.log("DIFF no RangeError"); } catch (e) { if (e.name !== "RangeError") { numberFails++; console.log("DIFF", e.name); } } }
let randomFails = 0;
for (let i = 0; i < 20000; i++) {
  const n = (Math.random() - 0.5) * 10 ** Math.floor(Math.random() * 16 - 6);
  const d = Math.floor(Math.random() * 6);
  const mine = n.toLocaleString(undefined, { maximumFractionDigits: d }), theirs = saved.call(n, "en-US", { maximumFractionDigits: d });
  if (mine !== theirs) { if (randomFails++ < 5) console.log("RDIFF", n, d, mine, theirs); }
}
console.log("fails", fails + f2 + numberFails + randomFails);
