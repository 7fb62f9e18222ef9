// The web platform's globals that guest code reaches for and QuickJS does not have: `URL`,
// `URLSearchParams`, `TextEncoder`, `TextDecoder`, `structuredClone` and `crypto` (`randomUUID`,
// `getRandomValues`, with bytes from the operating system's random source). Each is plain
// JavaScript over the engine's own built-ins and reaches nothing the guest could not reach
// itself, but the random bytes, which the host reads for it.
//
// Where the engine would answer wrongly without a word, it throws instead, naming what is
// missing: `toLocaleString` and friends with a locale or options (there is no `Intl`, so no
// locale or time zone data), `TextDecoder` for an encoding other than UTF-8, and a method of a
// string or an array read on a Promise (the `await` left out).
//
// `make` builds them (Node runs it in the tests that compare them with its own); the default
// export puts them on the global object, as writable and configurable as the engine's own.
export function make(randomBytes) {
  const hex = "0123456789ABCDEF";

  // --- UTF-8 -----------------------------------------------------------------------------

  // The UTF-8 bytes of `text`, a lone surrogate as U+FFFD.
  function utf8(text) {
    const bytes = [];
    for (let i = 0; i < text.length; i++) {
      let c = text.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
        const next = text.charCodeAt(i + 1);
        if (next >= 0xdc00 && next <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
          i++;
        }
      }
      if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
      if (c < 0x80) bytes.push(c);
      else if (c < 0x800) bytes.push(0xc0 | (c >> 6), 0x80 | (c & 63));
      else if (c < 0x10000) bytes.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
      else bytes.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    }
    return bytes;
  }

  // The text of UTF-8 `bytes` (an array-like of numbers): each maximal invalid sequence as
  // U+FFFD, or, with `fatal`, `null` at the first.
  function fromUtf8(bytes, fatal) {
    let text = "";
    let units = [];
    const flush = () => {
      text += String.fromCharCode.apply(null, units);
      units = [];
    };
    for (let i = 0; i < bytes.length; ) {
      const b = bytes[i];
      let need = 0;
      let c = 0;
      let lower = 0x80;
      let upper = 0xbf;
      if (b < 0x80) c = b;
      else if (b >= 0xc2 && b <= 0xdf) { need = 1; c = b & 31; }
      else if (b >= 0xe0 && b <= 0xef) { need = 2; c = b & 15; if (b === 0xe0) lower = 0xa0; if (b === 0xed) upper = 0x9f; }
      else if (b >= 0xf0 && b <= 0xf4) { need = 3; c = b & 7; if (b === 0xf0) lower = 0x90; if (b === 0xf4) upper = 0x8f; }
      else {
        if (fatal) return null;
        units.push(0xfffd);
        i++;
        continue;
      }
      let j = 1;
      for (; j <= need; j++) {
        const next = bytes[i + j];
        if (next === undefined || next < lower || next > upper) break;
        lower = 0x80;
        upper = 0xbf;
        c = (c << 6) | (next & 63);
      }
      if (j <= need) {
        if (fatal) return null;
        units.push(0xfffd);
        i += j;
        continue;
      }
      i += need + 1;
      if (c >= 0x10000) {
        c -= 0x10000;
        units.push(0xd800 + (c >> 10), 0xdc00 + (c & 1023));
      } else {
        units.push(c);
      }
      if (units.length >= 8192) flush();
    }
    flush();
    return text;
  }

  // The bytes of a BufferSource (an ArrayBuffer, a typed array or a DataView), as a Uint8Array
  // over the same memory.
  function bytesOf(input, what) {
    if (input instanceof ArrayBuffer || (typeof SharedArrayBuffer === "function" && input instanceof SharedArrayBuffer)) {
      return new Uint8Array(input);
    }
    if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    throw new TypeError(what + ": expected an ArrayBuffer, a typed array or a DataView, got " + (input === null ? "null" : typeof input));
  }

  class TextEncoder {
    get encoding() {
      return "utf-8";
    }
    encode(input = "") {
      return new Uint8Array(utf8(String(input)));
    }
    encodeInto(input, destination) {
      if (!(destination instanceof Uint8Array)) throw new TypeError("TextEncoder.encodeInto(source, destination): destination must be a Uint8Array");
      const text = String(input);
      let read = 0;
      let written = 0;
      while (read < text.length) {
        const c = text.codePointAt(read);
        const units = c > 0xffff ? 2 : 1;
        const bytes = utf8(text.slice(read, read + units));
        if (written + bytes.length > destination.length) break;
        for (let i = 0; i < bytes.length; i++) destination[written + i] = bytes[i];
        written += bytes.length;
        read += units;
      }
      return { read, written };
    }
  }

  const UTF8_LABELS = ["utf-8", "utf8", "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8"];

  class TextDecoder {
    #fatal;
    #ignoreBOM;
    constructor(label = "utf-8", options = {}) {
      const name = String(label).trim().toLowerCase();
      if (!UTF8_LABELS.includes(name)) {
        throw new RangeError("TextDecoder: the encoding \"" + String(label) + "\" is not available: toolweave's TextDecoder decodes UTF-8 only");
      }
      this.#fatal = Boolean(options && options.fatal);
      this.#ignoreBOM = Boolean(options && options.ignoreBOM);
    }
    get encoding() {
      return "utf-8";
    }
    get fatal() {
      return this.#fatal;
    }
    get ignoreBOM() {
      return this.#ignoreBOM;
    }
    decode(input, options) {
      if (options && options.stream) {
        throw new TypeError("TextDecoder.decode: {stream: true} is not supported by toolweave's TextDecoder: decode the bytes whole");
      }
      if (input === undefined) return "";
      let bytes = bytesOf(input, "TextDecoder.decode");
      if (!this.#ignoreBOM && bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
      const text = fromUtf8(bytes, this.#fatal);
      if (text === null) throw new TypeError("TextDecoder.decode: the data is not valid UTF-8 (fatal: true)");
      return text;
    }
  }

  // --- Percent-encoding and application/x-www-form-urlencoded ------------------------------

  // `text` with each code point `keep` refuses percent-encoded as its UTF-8 bytes.
  function percentEncode(text, keep) {
    let out = "";
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c < 0x80 && keep(c)) {
        out += text[i];
        continue;
      }
      let units = 1;
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
        const next = text.charCodeAt(i + 1);
        if (next >= 0xdc00 && next <= 0xdfff) units = 2;
      }
      const bytes = utf8(text.slice(i, i + units));
      for (let j = 0; j < bytes.length; j++) out += "%" + hex[bytes[j] >> 4] + hex[bytes[j] & 15];
      i += units - 1;
    }
    return out;
  }

  // The bytes `text` stands for: each `%XX` as its byte, the rest as UTF-8.
  function percentDecodeBytes(text) {
    const raw = utf8(text);
    const bytes = [];
    for (let i = 0; i < raw.length; i++) {
      if (raw[i] === 37 && i + 2 < raw.length && isHex(raw[i + 1]) && isHex(raw[i + 2])) {
        bytes.push(parseInt(String.fromCharCode(raw[i + 1], raw[i + 2]), 16));
        i += 2;
      } else {
        bytes.push(raw[i]);
      }
    }
    return bytes;
  }

  function isHex(c) {
    return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
  }

  const isAlphanumeric = (c) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
  // The code points the URL standard's encode sets leave as they are.
  const c0 = (c) => c > 0x1f && c < 0x7f;
  const fragmentKeeps = (c) => c0(c) && c !== 32 && c !== 34 && c !== 60 && c !== 62 && c !== 96;
  const queryKeeps = (c) => c0(c) && c !== 32 && c !== 34 && c !== 35 && c !== 60 && c !== 62;
  const specialQueryKeeps = (c) => queryKeeps(c) && c !== 39;
  const pathKeeps = (c) => queryKeeps(c) && c !== 63 && c !== 96 && c !== 123 && c !== 125;
  const userinfoKeeps = (c) => pathKeeps(c) && c !== 47 && c !== 58 && c !== 59 && c !== 61 && c !== 64 && (c < 91 || c > 94) && c !== 124;
  const formKeeps = (c) => isAlphanumeric(c) || c === 42 || c === 45 || c === 46 || c === 95;

  function formEncode(text) {
    return percentEncode(text, (c) => formKeeps(c) || c === 32).replace(/ /g, "+");
  }

  function formDecode(text) {
    return fromUtf8(percentDecodeBytes(text.replace(/\+/g, " ")), false);
  }

  function formParse(query) {
    const list = [];
    for (const part of query.split("&")) {
      if (part === "") continue;
      const at = part.indexOf("=");
      const name = at < 0 ? part : part.slice(0, at);
      const value = at < 0 ? "" : part.slice(at + 1);
      list.push([formDecode(name), formDecode(value)]);
    }
    return list;
  }

  // A string as the URL standard's "USVString": each lone surrogate as U+FFFD.
  function usv(value) {
    const text = String(value);
    return typeof text.toWellFormed === "function" ? text.toWellFormed() : text;
  }

  // --- URLSearchParams ---------------------------------------------------------------------

  // The URL whose query a URLSearchParams is, and how it is told of a change.
  const owners = new WeakMap();

  class URLSearchParams {
    #list = [];
    constructor(init = "") {
      if (typeof init === "object" && init !== null) {
        if (typeof init[Symbol.iterator] === "function") {
          for (const pair of init) {
            const items = Array.from(pair);
            if (items.length !== 2) throw new TypeError("URLSearchParams: each pair must have exactly two items, a name and a value");
            this.#list.push([usv(items[0]), usv(items[1])]);
          }
        } else {
          for (const key of Reflect.ownKeys(init)) {
            if (typeof key !== "string") continue;
            const descriptor = Reflect.getOwnPropertyDescriptor(init, key);
            if (descriptor !== undefined && descriptor.enumerable) this.#list.push([usv(key), usv(init[key])]);
          }
        }
      } else {
        const text = usv(init);
        this.#list = formParse(text.startsWith("?") ? text.slice(1) : text);
      }
    }
    static _replace(params, query) {
      params.#list = formParse(query);
    }
    #changed() {
      const owner = owners.get(this);
      if (owner !== undefined) owner(this.toString());
    }
    get size() {
      return this.#list.length;
    }
    append(name, value) {
      this.#list.push([usv(name), usv(value)]);
      this.#changed();
    }
    delete(name, value) {
      const key = usv(name);
      const only = value === undefined ? undefined : usv(value);
      this.#list = this.#list.filter(([n, v]) => !(n === key && (only === undefined || v === only)));
      this.#changed();
    }
    get(name) {
      const key = usv(name);
      const found = this.#list.find(([n]) => n === key);
      return found === undefined ? null : found[1];
    }
    getAll(name) {
      const key = usv(name);
      return this.#list.filter(([n]) => n === key).map(([, v]) => v);
    }
    has(name, value) {
      const key = usv(name);
      const only = value === undefined ? undefined : usv(value);
      return this.#list.some(([n, v]) => n === key && (only === undefined || v === only));
    }
    set(name, value) {
      const key = usv(name);
      const text = usv(value);
      const at = this.#list.findIndex(([n]) => n === key);
      if (at < 0) {
        this.#list.push([key, text]);
      } else {
        this.#list[at] = [key, text];
        this.#list = this.#list.filter(([n], i) => i <= at || n !== key);
      }
      this.#changed();
    }
    sort() {
      // Stable, by code units, as the standard says.
      this.#list = this.#list
        .map((pair, i) => [pair, i])
        .sort((a, b) => (a[0][0] < b[0][0] ? -1 : a[0][0] > b[0][0] ? 1 : a[1] - b[1]))
        .map(([pair]) => pair);
      this.#changed();
    }
    forEach(callback, thisArg) {
      if (typeof callback !== "function") throw new TypeError("URLSearchParams.forEach(callback): callback must be a function");
      for (let i = 0; i < this.#list.length; i++) callback.call(thisArg, this.#list[i][1], this.#list[i][0], this);
    }
    *entries() {
      for (let i = 0; i < this.#list.length; i++) yield [this.#list[i][0], this.#list[i][1]];
    }
    *keys() {
      for (let i = 0; i < this.#list.length; i++) yield this.#list[i][0];
    }
    *values() {
      for (let i = 0; i < this.#list.length; i++) yield this.#list[i][1];
    }
    [Symbol.iterator]() {
      return this.entries();
    }
    toString() {
      return this.#list.map(([n, v]) => formEncode(n) + "=" + formEncode(v)).join("&");
    }
    get [Symbol.toStringTag]() {
      return "URLSearchParams";
    }
  }
  const replaceQuery = URLSearchParams._replace;
  delete URLSearchParams._replace;

  // --- URL -------------------------------------------------------------------------------

  const SPECIAL = { __proto__: null, "ftp:": "21", "file:": "", "http:": "80", "https:": "443", "ws:": "80", "wss:": "443" };

  function invalid(input, why) {
    return new TypeError("Invalid URL: " + JSON.stringify(String(input)) + (why ? " (" + why + ")" : ""));
  }

  // An IPv4 address written in any of the forms the standard accepts (`127.1`, `0x7f.0.0.1`),
  // as its dotted form; `undefined` when `host` is not one; throws when it is one, wrongly.
  function ipv4(host, input) {
    const parts = host.split(".");
    if (parts[parts.length - 1] === "" && parts.length > 1) parts.pop();
    const last = parts[parts.length - 1];
    if (!/^(0[xX][0-9a-fA-F]*|[0-9]+)$/.test(last)) return undefined;
    if (parts.length > 4) throw invalid(input, "an IPv4 address has at most four parts");
    const numbers = parts.map((part) => {
      if (/^0[xX][0-9a-fA-F]*$/.test(part)) return part.length === 2 ? 0 : parseInt(part.slice(2), 16);
      if (/^0[0-7]+$/.test(part)) return parseInt(part.slice(1), 8);
      if (/^[0-9]+$/.test(part)) return parseInt(part, 10);
      throw invalid(input, "an IPv4 address part is not a number");
    });
    for (let i = 0; i < numbers.length - 1; i++) if (numbers[i] > 255) throw invalid(input, "an IPv4 address part is over 255");
    if (numbers[numbers.length - 1] >= 256 ** (5 - numbers.length)) throw invalid(input, "the IPv4 address is out of range");
    let value = numbers[numbers.length - 1];
    for (let i = 0; i < numbers.length - 1; i++) value += numbers[i] * 256 ** (3 - i);
    const bytes = [];
    for (let i = 3; i >= 0; i--) bytes.push(Math.floor(value / 256 ** i) % 256);
    return bytes.join(".");
  }

  // The host of a URL as its record keeps it: lowercased, percent-decoded, checked.
  function parseHost(text, special, input) {
    if (text.startsWith("[")) {
      if (!text.endsWith("]") || !/^\[[0-9A-Fa-f:.]+\]$/.test(text)) throw invalid(input, "a bracketed host must be an IPv6 address");
      return text.toLowerCase();
    }
    if (!special) {
      if (/[\0\t\n\r #/:<>?@[\\\]^|]/.test(text)) throw invalid(input, "the host has a character a host may not have");
      return percentEncode(text, c0);
    }
    const decoded = fromUtf8(percentDecodeBytes(text), false);
    if (/[^\x00-\x7f]/.test(decoded)) {
      throw invalid(input, "internationalized domain names are not supported by toolweave's URL: write the host in its xn-- (punycode) form");
    }
    const host = decoded.toLowerCase();
    if (host === "" || /[\0-\x20#%/:<>?@[\\\]^|\x7f]/.test(host)) throw invalid(input, "the host is empty or has a character a host may not have");
    const address = ipv4(host, input);
    return address === undefined ? host : address;
  }

  // The path segments of `path`, dots resolved onto `segments`.
  function addPath(segments, path, special) {
    const parts = path.split(special ? /[\/\\]/ : "/");
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      const lower = part.toLowerCase();
      const last = i === parts.length - 1;
      if (lower === ".." || lower === ".%2e" || lower === "%2e." || lower === "%2e%2e") {
        if (segments.length > 0) segments.pop();
        if (last) segments.push("");
      } else if (lower === "." || lower === "%2e") {
        if (last) segments.push("");
      } else {
        segments.push(percentEncode(part, pathKeeps));
      }
    }
    return segments;
  }

  // The parts of `text` after its authority: path, query and fragment.
  function splitTail(text) {
    let fragment = null;
    let query = null;
    const hash = text.indexOf("#");
    if (hash >= 0) {
      fragment = text.slice(hash + 1);
      text = text.slice(0, hash);
    }
    const question = text.indexOf("?");
    if (question >= 0) {
      query = text.slice(question + 1);
      text = text.slice(0, question);
    }
    return { path: text, query, fragment };
  }

  function finish(record, tail, special) {
    record.query = tail.query === null ? null : percentEncode(tail.query, special ? specialQueryKeeps : queryKeeps);
    record.fragment = tail.fragment === null ? null : percentEncode(tail.fragment, fragmentKeeps);
    return record;
  }

  function authority(record, text, input) {
    const special = record.protocol in SPECIAL;
    const end = text.search(special ? /[\/\\?#]/ : /[\/?#]/);
    const found = end < 0 ? text : text.slice(0, end);
    const rest = end < 0 ? "" : text.slice(end);
    let hostPort = found;
    const at = found.lastIndexOf("@");
    if (at >= 0) {
      const userinfo = found.slice(0, at);
      hostPort = found.slice(at + 1);
      const colon = userinfo.indexOf(":");
      record.username = percentEncode(colon < 0 ? userinfo : userinfo.slice(0, colon), userinfoKeeps);
      record.password = colon < 0 ? "" : percentEncode(userinfo.slice(colon + 1), userinfoKeeps);
    }
    const bracket = hostPort.lastIndexOf("]");
    const colon = hostPort.lastIndexOf(":");
    let host = hostPort;
    let port = "";
    if (colon > bracket) {
      host = hostPort.slice(0, colon);
      port = hostPort.slice(colon + 1);
      if (!/^[0-9]*$/.test(port)) throw invalid(input, "the port is not a number");
      if (port !== "") {
        const number = parseInt(port, 10);
        if (number > 65535) throw invalid(input, "the port is over 65535");
        port = SPECIAL[record.protocol] === String(number) ? "" : String(number);
      }
    }
    if (record.protocol === "file:") {
      record.hostname = host === "" ? "" : parseHost(host, true, input);
      if (record.hostname === "localhost") record.hostname = "";
      if (port !== "" || at >= 0) throw invalid(input, "a file URL has no port or credentials");
    } else {
      if (host === "" && (special || at >= 0 || port !== "")) throw invalid(input, "the host is missing");
      record.hostname = host === "" ? "" : parseHost(host, special, input);
    }
    record.port = port;
    return rest;
  }

  function emptyRecord(protocol) {
    return { protocol, username: "", password: "", hostname: null, port: "", path: [], opaque: null, query: null, fragment: null };
  }

  // The URL record of `input`, resolved against the record `base`; throws a TypeError naming
  // what is wrong.
  function parseUrl(input, base) {
    const text = String(input).replace(/^[\0-\x20]+|[\0-\x20]+$/g, "").replace(/[\t\n\r]/g, "");
    const scheme = /^([A-Za-z][A-Za-z0-9+.\-]*):/.exec(text);
    if (scheme !== null) {
      const protocol = scheme[1].toLowerCase() + ":";
      const rest = text.slice(scheme[0].length);
      const special = protocol in SPECIAL;
      if (special && base !== undefined && base.protocol === protocol && !/^[\/\\]/.test(rest)) {
        return relative(rest, base, input);
      }
      const record = emptyRecord(protocol);
      if (special) {
        if (protocol === "file:" && !/^[\/\\]{2}/.test(rest)) {
          if (base !== undefined && base.protocol === "file:") return relative(rest, base, input);
          record.hostname = "";
          return withPath(record, rest, true);
        }
        const slashes = protocol === "file:" ? /^[\/\\]{2}/ : /^[\/\\]+/;
        return withPath(record, authority(record, rest.replace(slashes, ""), input), true);
      }
      if (rest.startsWith("//")) return withPath(record, authority(record, rest.slice(2), input), false);
      if (rest.startsWith("/")) return withPath(record, rest, false);
      const tail = splitTail(rest);
      record.opaque = percentEncode(tail.path, c0);
      return finish(record, tail, false);
    }
    if (base === undefined) throw invalid(input, "a relative URL needs a base, as in new URL(path, \"https://example.com\")");
    if (base.opaque !== null) {
      if (!text.startsWith("#")) throw invalid(input, "the base URL cannot be a base (it has no hierarchical path)");
      const record = { ...base, path: [] };
      record.fragment = percentEncode(text.slice(1), fragmentKeeps);
      return record;
    }
    return relative(text, base, input);
  }

  function relative(text, base, input) {
    const special = base.protocol in SPECIAL;
    const slash = special ? /^[\/\\]/ : /^\//;
    const record = { ...base, path: base.path.slice(), query: base.query, fragment: null };
    if (special ? /^[\/\\]{2}/.test(text) : text.startsWith("//")) {
      const fresh = emptyRecord(base.protocol);
      const rest = authority(fresh, text.replace(special ? /^[\/\\]+/ : /^\/\//, ""), input);
      return withPath(fresh, rest, special);
    }
    if (slash.test(text)) {
      record.path = [];
      return withPath(record, text, special);
    }
    if (text === "") return record;
    if (text.startsWith("?") || text.startsWith("#")) {
      const tail = splitTail(text);
      if (tail.query === null) tail.query = base.query === null ? null : undefined;
      const query = tail.query;
      finish(record, { query: query === undefined ? null : query, fragment: tail.fragment }, special);
      if (query === undefined) record.query = base.query;
      return record;
    }
    record.path.pop();
    return withPath(record, text, special, true);
  }

  function withPath(record, text, special, merge) {
    const tail = splitTail(text);
    let path = tail.path;
    if (!merge && (path.startsWith("/") || (special && path.startsWith("\\")))) path = path.slice(1);
    record.path = addPath(merge ? record.path : [], path, special);
    if (special && record.path.length === 0) record.path = [""];
    if (!special && !merge && tail.path === "") record.path = [];
    return finish(record, tail, special);
  }

  function pathname(record) {
    if (record.opaque !== null) return record.opaque;
    return record.path.length === 0 ? "" : "/" + record.path.join("/");
  }

  function hostOf(record) {
    if (record.hostname === null) return "";
    return record.port === "" ? record.hostname : record.hostname + ":" + record.port;
  }

  function serialize(record, withFragment) {
    let out = record.protocol;
    if (record.hostname !== null) {
      out += "//";
      if (record.username !== "" || record.password !== "") {
        out += record.username + (record.password !== "" ? ":" + record.password : "") + "@";
      }
      out += hostOf(record);
    } else if (record.opaque === null && record.path.length > 1 && record.path[0] === "") {
      out += "/.";
    }
    out += pathname(record);
    if (record.query !== null) out += "?" + record.query;
    if (withFragment && record.fragment !== null) out += "#" + record.fragment;
    return out;
  }

  function baseRecord(base) {
    if (base === undefined) return undefined;
    if (base instanceof URL) return recordOf(base);
    return parseUrl(base, undefined);
  }

  let recordOf;

  class URL {
    #record;
    #params;
    constructor(url, base) {
      this.#record = parseUrl(usv(url), base === undefined ? undefined : baseRecord(typeof base === "object" && base instanceof URL ? base : usv(base)));
      this.#params = new URLSearchParams(this.#record.query === null ? "" : this.#record.query);
      owners.set(this.#params, (query) => {
        this.#record.query = query === "" ? null : query;
      });
    }
    static _recordOf(url) {
      return url.#record;
    }
    static canParse(url, base) {
      try {
        new URL(url, base);
        return true;
      } catch (_) {
        return false;
      }
    }
    static parse(url, base) {
      try {
        return new URL(url, base);
      } catch (_) {
        return null;
      }
    }
    #replace(text) {
      this.#record = parseUrl(text, undefined);
      replaceQuery(this.#params, this.#record.query === null ? "" : this.#record.query);
    }
    get href() {
      return serialize(this.#record, true);
    }
    set href(value) {
      this.#replace(usv(value));
    }
    get origin() {
      const record = this.#record;
      if (record.protocol === "blob:") {
        const inner = URL.parse(pathname(record));
        return inner !== null && (inner.protocol === "http:" || inner.protocol === "https:") ? inner.origin : "null";
      }
      if (!(record.protocol in SPECIAL) || record.protocol === "file:") return "null";
      return record.protocol + "//" + hostOf(record);
    }
    get protocol() {
      return this.#record.protocol;
    }
    set protocol(value) {
      const protocol = usv(value).replace(/:.*$/, "").toLowerCase() + ":";
      if (!/^[a-z][a-z0-9+.\-]*:$/.test(protocol)) return;
      if ((protocol in SPECIAL) !== (this.#record.protocol in SPECIAL)) return;
      if (protocol === "file:" && (this.#record.port !== "" || this.#record.username !== "")) return;
      this.#record.protocol = protocol;
      if (SPECIAL[protocol] === this.#record.port) this.#record.port = "";
    }
    get username() {
      return this.#record.username;
    }
    set username(value) {
      if (this.#record.hostname === null || this.#record.hostname === "" || this.#record.protocol === "file:") return;
      this.#record.username = percentEncode(usv(value), userinfoKeeps);
    }
    get password() {
      return this.#record.password;
    }
    set password(value) {
      if (this.#record.hostname === null || this.#record.hostname === "" || this.#record.protocol === "file:") return;
      this.#record.password = percentEncode(usv(value), userinfoKeeps);
    }
    get host() {
      return hostOf(this.#record);
    }
    set host(value) {
      this.#setAuthority(usv(value), true);
    }
    get hostname() {
      return this.#record.hostname === null ? "" : this.#record.hostname;
    }
    set hostname(value) {
      this.#setAuthority(usv(value).replace(/:.*$/, ""), false);
    }
    #setAuthority(text, withPort) {
      if (this.#record.opaque !== null) return;
      const record = { ...this.#record };
      const end = text.search(/[\/\\?#@]/);
      const host = end < 0 ? text : text.slice(0, end);
      try {
        const port = record.port;
        authority(record, host, text);
        if (!withPort || !/:[0-9]*$/.test(host.replace(/^\[.*\]/, ""))) record.port = port;
      } catch (_) {
        return;
      }
      this.#record = record;
    }
    get port() {
      return this.#record.port;
    }
    set port(value) {
      const record = this.#record;
      if (record.hostname === null || record.hostname === "" || record.protocol === "file:") return;
      const digits = /^[0-9]*/.exec(usv(value))[0];
      if (digits === "") {
        if (usv(value) === "") record.port = "";
        return;
      }
      const number = parseInt(digits, 10);
      if (number > 65535) return;
      record.port = SPECIAL[record.protocol] === String(number) ? "" : String(number);
    }
    get pathname() {
      return pathname(this.#record);
    }
    set pathname(value) {
      const record = this.#record;
      if (record.opaque !== null) return;
      const special = record.protocol in SPECIAL;
      let text = usv(value);
      if (special || record.hostname !== null) text = text.replace(special ? /^[\/\\]/ : /^\//, "");
      record.path = addPath([], text.replace(/[?#]/g, (c) => (c === "?" ? "%3F" : "%23")), special);
      if (special && record.path.length === 0) record.path = [""];
    }
    get search() {
      const query = this.#record.query;
      return query === null || query === "" ? "" : "?" + query;
    }
    set search(value) {
      const text = usv(value);
      const query = text.startsWith("?") ? text.slice(1) : text;
      this.#record.query = text === "" ? null : percentEncode(query, this.#record.protocol in SPECIAL ? specialQueryKeeps : queryKeeps);
      replaceQuery(this.#params, query);
    }
    get searchParams() {
      return this.#params;
    }
    get hash() {
      const fragment = this.#record.fragment;
      return fragment === null || fragment === "" ? "" : "#" + fragment;
    }
    set hash(value) {
      const text = usv(value);
      this.#record.fragment = text === "" ? null : percentEncode(text.startsWith("#") ? text.slice(1) : text, fragmentKeeps);
    }
    toString() {
      return this.href;
    }
    toJSON() {
      return this.href;
    }
    get [Symbol.toStringTag]() {
      return "URL";
    }
  }
  recordOf = URL._recordOf;
  delete URL._recordOf;

  // --- structuredClone -------------------------------------------------------------------

  const kindTag = (value) => Object.prototype.toString.call(value).slice(8, -1);

  function cloneError(what) {
    return new DOMException("structuredClone: " + what + " cannot be cloned", "DataCloneError");
  }

  function structuredClone(value, options) {
    if (options !== undefined && options !== null && options.transfer !== undefined && Array.from(options.transfer).length > 0) {
      throw new TypeError("structuredClone: transfer is not supported by toolweave: clone without it");
    }
    const seen = new Map();
    const clone = (item) => {
      if (typeof item === "function") throw cloneError("a function (" + (item.name || "anonymous") + ")");
      if (typeof item === "symbol") throw cloneError("a symbol");
      if (typeof item !== "object" || item === null) return item;
      if (seen.has(item)) return seen.get(item);
      const remember = (copy) => {
        seen.set(item, copy);
        return copy;
      };
      const tag = kindTag(item);
      if (Array.isArray(item)) {
        const copy = remember(new Array(item.length));
        for (const key of Object.keys(item)) copy[key] = clone(item[key]);
        return copy;
      }
      switch (tag) {
        case "Date":
          return remember(new Date(Date.prototype.getTime.call(item)));
        case "RegExp":
          return remember(new RegExp(item.source, item.flags));
        case "Boolean":
          return remember(Object(Boolean.prototype.valueOf.call(item)));
        case "Number":
          return remember(Object(Number.prototype.valueOf.call(item)));
        case "String":
          return remember(Object(String.prototype.valueOf.call(item)));
        case "BigInt":
          return remember(Object(BigInt.prototype.valueOf.call(item)));
        case "Map": {
          const copy = remember(new Map());
          for (const [key, entry] of Map.prototype.entries.call(item)) copy.set(clone(key), clone(entry));
          return copy;
        }
        case "Set": {
          const copy = remember(new Set());
          for (const entry of Set.prototype.values.call(item)) copy.add(clone(entry));
          return copy;
        }
        case "ArrayBuffer":
          return remember(ArrayBuffer.prototype.slice.call(item, 0));
        case "DataView": {
          const buffer = clone(item.buffer);
          return remember(new DataView(buffer, item.byteOffset, item.byteLength));
        }
        case "Error":
          break;
        case "Object":
          break;
        default:
          if (ArrayBuffer.isView(item)) {
            const buffer = clone(item.buffer);
            return remember(new item.constructor(buffer, item.byteOffset, item.length));
          }
          if (tag === "Promise" || tag === "WeakMap" || tag === "WeakSet" || tag === "WeakRef" || tag === "Generator" || tag === "AsyncGenerator") {
            throw cloneError("a " + tag);
          }
      }
      if (item instanceof Error) {
        const names = ["Error", "EvalError", "RangeError", "ReferenceError", "SyntaxError", "TypeError", "URIError"];
        const Kind = names.includes(item.name) ? globalThis[item.name] : Error;
        const copy = remember(new Kind(item.message));
        if ("cause" in item) copy.cause = clone(item.cause);
        if (typeof item.stack === "string") Object.defineProperty(copy, "stack", { value: item.stack, writable: true, configurable: true });
        return copy;
      }
      // A plain object, or an instance of a class: its own enumerable string keys, as a plain
      // object (the standard drops the prototype too).
      const copy = remember({});
      for (const key of Object.keys(item)) copy[key] = clone(item[key]);
      return copy;
    };
    return clone(value);
  }

  // --- crypto ----------------------------------------------------------------------------

  const INTEGER_ARRAYS = ["Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "BigInt64Array", "BigUint64Array"];

  function getRandomValues(array) {
    if (!ArrayBuffer.isView(array) || !INTEGER_ARRAYS.includes(kindTag(array))) {
      throw new DOMException("crypto.getRandomValues(array): array must be an integer typed array, such as a Uint8Array", "TypeMismatchError");
    }
    if (array.byteLength > 65536) {
      throw new DOMException("crypto.getRandomValues(array): " + array.byteLength + " bytes asked for, over the 65536 one call may fill: fill it in pieces", "QuotaExceededError");
    }
    const bytes = randomBytes(array.byteLength);
    new Uint8Array(array.buffer, array.byteOffset, array.byteLength).set(bytes);
    return array;
  }

  function randomUUID() {
    const bytes = randomBytes(16);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let text = "";
    for (let i = 0; i < 16; i++) {
      if (i === 4 || i === 6 || i === 8 || i === 10) text += "-";
      text += (bytes[i] >> 4).toString(16) + (bytes[i] & 15).toString(16);
    }
    return text;
  }

  const crypto = {
    getRandomValues,
    randomUUID,
    get subtle() {
      throw new TypeError("crypto.subtle is not available in toolweave's JavaScript (no hashing, signing or encryption): use a tool that does it, if a server offers one");
    },
  };
  Object.defineProperty(crypto, Symbol.toStringTag, { value: "Crypto", configurable: true });

  return { URL, URLSearchParams, TextEncoder, TextDecoder, structuredClone, crypto };
}

// --- Guards: where the engine would answer wrongly without a word ---------------------------

// What `toLocaleString` with a locale or options would need, and what to do instead.
function localeGuard(method, what, fallback, plain) {
  return function (locales, options) {
    const english = locales === undefined || locales === "en-US" || locales === "en" || (Array.isArray(locales) && (locales.length === 0 || locales[0] === "en-US" || locales[0] === "en"));
    let asked = null;
    if (!english) asked = "the locale " + JSON.stringify(locales);
    else if (what === "Number.prototype") {
      const given = options === undefined || options === null ? {} : Object(options);
      const others = Object.keys(given).filter((key) => given[key] !== undefined && !NUMBER_OPTIONS.includes(key));
      const text = others.length > 0 ? undefined : englishNumber(Number.prototype.valueOf.call(this), given);
      if (text !== undefined) return text;
      asked = others.length > 0 ? "the options " + others.join(", ") : "the style or currency asked for (only decimal, percent and USD)";
    } else if (options !== undefined && options !== null) {
      const keys = Object.keys(Object(options)).filter((key) => options[key] !== undefined);
      const zone = options.timeZone === undefined ? "UTC" : String(options.timeZone).toUpperCase();
      const others = keys.filter((key) => key !== "timeZone");
      if (others.length > 0) asked = "the options " + others.join(", ");
      else if (zone !== "UTC" && zone !== "ETC/UTC" && zone !== "GMT" && zone !== "ETC/GMT") asked = "the time zone " + JSON.stringify(options.timeZone);
    }
    if (asked === null) return plain.call(this);
    throw new RangeError(
      what + "." + method + "(): " + asked + " cannot be honoured: toolweave's JavaScript has no Intl (no locale or time zone data). " +
        fallback + ". " +
        "Format it yourself (toISOString(), getUTCHours(), toFixed()), or use a tool that does it, if a server offers one (searchTools(\"convert time zone\"))",
    );
  };
}

// Formats a date as en-US does by default, in UTC: `7/4/2024, 1:05:09 PM`, or its `parts`
// (`date`, `time`).
function englishDate(date, parts) {
  const time = Date.prototype.getTime.call(date);
  if (time !== time) return "Invalid Date";
  const at = new Date(time);
  const hours = at.getUTCHours();
  const two = (n) => (n < 10 ? "0" + n : String(n));
  const day = at.getUTCMonth() + 1 + "/" + at.getUTCDate() + "/" + at.getUTCFullYear();
  const clock = (hours % 12 || 12) + ":" + two(at.getUTCMinutes()) + ":" + two(at.getUTCSeconds()) + (hours < 12 ? " AM" : " PM");
  if (parts === "date") return day;
  if (parts === "time") return clock;
  return day + ", " + clock;
}

// What the guards' errors say toLocaleString can do.
const DATE_FALLBACK = "Without arguments, or with timeZone \"UTC\", it formats in UTC for en-US ";
const NUMBER_FALLBACK = "It formats for en-US (\"1,234.567\"), with minimumFractionDigits, maximumFractionDigits, useGrouping, and style \"percent\" or \"currency\" in USD";

// The options of Number.prototype.toLocaleString this formatting honours.
const NUMBER_OPTIONS = ["minimumFractionDigits", "maximumFractionDigits", "useGrouping", "style", "currency"];

// Formats `value` as en-US does: grouped thousands, at most three fraction digits by default;
// `options` may set the fraction digits, turn grouping off, and ask for a percent or US dollars.
// Returns `undefined` for options it cannot honour.
function englishNumber(value, options) {
  const style = options.style === undefined ? "decimal" : String(options.style);
  const dollars = style === "currency" && String(options.currency).toUpperCase() === "USD";
  if (style !== "decimal" && style !== "percent" && !dollars) return undefined;
  if (style !== "currency" && options.currency !== undefined) return undefined;
  const digits = (key, fallback) => {
    if (options[key] === undefined) return fallback;
    const number = Number(options[key]);
    if (!Number.isInteger(number) || number < 0 || number > 100) throw new RangeError(key + " must be a whole number from 0 to 100, got " + String(options[key]));
    return number;
  };
  const least = digits("minimumFractionDigits", dollars ? 2 : 0);
  const most = digits("maximumFractionDigits", Math.max(least, dollars ? 2 : style === "percent" ? 0 : 3));
  if (most < least) throw new RangeError("maximumFractionDigits (" + most + ") is less than minimumFractionDigits (" + least + ")");
  const scaled = style === "percent" ? value * 100 : value;
  if (!Number.isFinite(scaled)) return scaled !== scaled ? "NaN" : scaled > 0 ? "∞" : "-∞";
  let fixed = roundDecimal(Math.abs(scaled), most);
  if (most > least) fixed = fixed.replace(new RegExp("\\.?0{1," + (most - least) + "}$"), "");
  const [whole, fraction] = fixed.split(".");
  const grouped = options.useGrouping === false ? whole : whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  let text = fraction === undefined ? grouped : grouped + "." + fraction;
  if (dollars) text = "$" + text;
  if (style === "percent") text += "%";
  return scaled < 0 || Object.is(scaled, -0) ? "-" + text : text;
}

// `value` (finite, not negative) with `digits` fraction digits, rounded half away from zero on
// its shortest decimal form, as Intl rounds (1.005 is 1.01 to two digits; toFixed says 1.00).
function roundDecimal(value, digits) {
  const [mantissa, exponent] = String(value).split("e");
  const point = mantissa.indexOf(".");
  const all = mantissa.replace(".", "");
  let whole = (point < 0 ? mantissa.length : point) + Number(exponent || 0);
  let numerals = all;
  if (whole < 0) {
    numerals = "0".repeat(-whole) + numerals;
    whole = 0;
  }
  numerals = numerals.padEnd(whole + digits + 1, "0");
  const kept = numerals.slice(0, whole + digits).split("").map(Number);
  if (Number(numerals[whole + digits]) >= 5) {
    let i = kept.length - 1;
    for (; i >= 0 && kept[i] === 9; i--) kept[i] = 0;
    if (i < 0) {
      kept.unshift(1);
      whole++;
    } else {
      kept[i]++;
    }
  }
  const integer = kept.slice(0, whole).join("").replace(/^0+(?=\d)/, "") || "0";
  return digits === 0 ? integer : integer + "." + kept.slice(whole).join("");
}

// The `await` left out: a method of a string or an array read on a Promise.
const PROMISE_MISREADS = ["split", "trim", "toUpperCase", "toLowerCase", "includes", "startsWith", "endsWith", "replace", "replaceAll", "match", "slice", "substring", "indexOf", "map", "filter", "forEach", "reduce", "find", "findIndex", "some", "every", "join", "flat", "flatMap", "sort", "length", "content", "structuredContent", "items", "data", "text", "result", "results", "rows"];

export default function install(native) {
  const made = make(native.randomBytes);
  const promiseMisread = native.promiseMisread;
  const names = Object.keys(made);
  for (let i = 0; i < names.length; i++) {
    Object.defineProperty(globalThis, names[i], { value: made[names[i]], writable: true, enumerable: false, configurable: true });
  }
  const dateFormat = function () {
    return englishDate(this, "both");
  };
  const dateOnly = function () {
    return englishDate(this, "date");
  };
  const timeOnly = function () {
    return englishDate(this, "time");
  };
  const numberPlain = function () {
    return englishNumber(Number.prototype.valueOf.call(this), {});
  };
  const replacements = [
    [Date.prototype, "toLocaleString", localeGuard("toLocaleString", "Date.prototype", DATE_FALLBACK + "(\"1/1/1970, 12:00:00 AM\")", dateFormat)],
    [Date.prototype, "toLocaleDateString", localeGuard("toLocaleDateString", "Date.prototype", DATE_FALLBACK + "(\"1/1/1970\")", dateOnly)],
    [Date.prototype, "toLocaleTimeString", localeGuard("toLocaleTimeString", "Date.prototype", DATE_FALLBACK + "(\"12:00:00 AM\")", timeOnly)],
    [Number.prototype, "toLocaleString", localeGuard("toLocaleString", "Number.prototype", NUMBER_FALLBACK, numberPlain)],
  ];
  for (const [prototype, name, replacement] of replacements) {
    Object.defineProperty(replacement, "name", { value: name });
    Object.defineProperty(prototype, name, { value: replacement, writable: true, enumerable: false, configurable: true });
  }
  for (const name of PROMISE_MISREADS) {
    Object.defineProperty(Promise.prototype, name, {
      get() {
        throw new TypeError("." + name + " " + promiseMisread);
      },
      set(value) {
        Object.defineProperty(this, name, { value, writable: true, enumerable: true, configurable: true });
      },
      enumerable: false,
      configurable: true,
    });
  }
}
