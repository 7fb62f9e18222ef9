// The guest's view of the host, set up before guest code runs. Everything the bridge relies on
// is captured here first, so guest code that tampers with built-ins afterwards cannot reach the
// pending-call table, forge answers, redirect calls or change how the host reads a thrown error:
// that table lives only in this closure, and nothing below calls a method looked up at run time
// on an object the guest can reach (no `array.push`, no `Promise.reject`, no `instanceof`). The
// only guest code the prelude runs is the guest's own: its callbacks, getters, `toString` and
// `toJSON` on values it handed over.
//
// It is a module (strict by definition) so that it is compiled once per process and loaded as
// bytecode into each runtime.
export default function prelude(native) {
  // The engine's native functions, each of which only queues a message or reads the engine's
  // own state (see javascript.rs).
  const callTool = native.callTool;
  const search = native.search;
  const describeNames = native.describeNames;
  const askServer = native.askServer;
  const askSession = native.askSession;
  const emitBlock = native.emitBlock;
  const reportProgress = native.progress;
  const askLlm = native.askLlm;
  const log = native.log;
  const startTimer = native.startTimer;
  const stopTimer = native.stopTimer;
  const listNames = native.listNames;
  const kindOf = native.kindOf;
  const PromiseCtor = Promise;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const SetCtor = Set;
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const freeze = Object.freeze;
  const defineProperty = Object.defineProperty;
  const isArray = Array.isArray;
  const isError = Error.isError;
  const StringCtor = String;
  const startsWith = String.prototype.startsWith;
  const ProxyCtor = Proxy;
  const create = Object.create;
  const setPrototypeOf = Object.setPrototypeOf;
  const WeakMapCtor = WeakMap;
  const weakGet = WeakMap.prototype.get;
  const weakSet = WeakMap.prototype.set;
  const ownKeys = Reflect.ownKeys;
  const getOwnPropertyDescriptor = Reflect.getOwnPropertyDescriptor;
  const reflectDefineProperty = Reflect.defineProperty;
  const apply = Reflect.apply;
  const setHas = Set.prototype.has;
  const setAdd = Set.prototype.add;
  const getPrototypeOf = Object.getPrototypeOf;
  const keys = Object.keys;
  const ObjectPrototype = Object.prototype;
  const ArrayPrototype = Array.prototype;
  const mapForEach = Map.prototype.forEach;
  const setForEach = Set.prototype.forEach;
  const typedLength = Reflect.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), "length").get;
  const wrapperValueOf = [Number.prototype.valueOf, String.prototype.valueOf, Boolean.prototype.valueOf];
  // The stack QuickJS recorded when an error was made: an own `stack` property (which a guest
  // can define) shadows it but cannot replace it.
  const recordedStack = Reflect.getOwnPropertyDescriptor(Error.prototype, "stack").get;

  // Property descriptors have no prototype: one inheriting a guest's `Object.prototype.get` would
  // be refused.
  function append(list, item) {
    // Defined, not assigned: an assignment or `push` could reach a setter on Array.prototype.
    defineProperty(list, list.length, { __proto__: null, value: item, writable: true, enumerable: true, configurable: true });
  }

  function rejected(message) {
    return new PromiseCtor(function (_resolve, reject) {
      reject(new ErrorCtor(message));
    });
  }

  // Stack traces keep up to 64 frames and cannot be reconfigured. Beyond better positions in
  // guest errors, this is how a stack overflow is told from a guest's imitation of one: the
  // engine's own overflow error gets a long trace built at the bottom of the stack, where the
  // host's allocator sees it, and that trace stays the error's own (see `recordedStack` and
  // alloc.rs).
  Error.stackTraceLimit = 64;
  defineProperty(Error, "stackTraceLimit", {
    __proto__: null,
    get: function () { return 64; },
    set: function () {},
    enumerable: false,
    configurable: false,
  });
  defineProperty(Error, "prepareStackTrace", {
    __proto__: null,
    get: function () { return undefined; },
    set: function () {},
    enumerable: false,
    configurable: false,
  });

  const pending = create(null);
  const timers = create(null);

  // `send()` hands the request to the engine and returns its id; the answer settles the promise.
  // The error a failure rejects with is made now, so that its stack is the call's: the lines of
  // the program that made it, which an error made when the answer arrives would not have.
  function request(send) {
    return new PromiseCtor(function (resolve, reject) {
      const failed = new ErrorCtor("");
      const id = send();
      pending[id] = { resolve: resolve, reject: reject, failed: failed };
    });
  }

  // A tool call. The name travels apart from the arguments, so nothing the arguments' JSON goes
  // through (a guest `toJSON`) can change which tool is called.
  function requestTool(name, args, raw) {
    let json;
    try {
      json = toJson(args, "args");
    } catch (error) {
      return rejected("the arguments cannot be sent as JSON: " + describe(error));
    }
    if (typeof json !== "string") return rejected("the arguments cannot be sent as JSON: " + json.problem);
    return request(function () {
      return callTool(name, json, raw);
    });
  }

  // Called by the engine with each answer: a value as JSON text, or (`plain`) a string as it is.
  function settle(id, ok, text, plain) {
    const waiter = pending[id];
    if (waiter === undefined) return;
    delete pending[id];
    if (ok) {
      waiter.resolve(plain ? text : parse(text));
    } else {
      defineProperty(waiter.failed, "message", { __proto__: null, value: text, writable: true, enumerable: false, configurable: true });
      waiter.reject(waiter.failed);
    }
  }

  // Called by the engine when a timer is due.
  function fire(id) {
    const timer = timers[id];
    if (timer === undefined) return;
    delete timers[id];
    apply(timer.callback, undefined, timer.args);
  }

  // What every tool function inherits: `raw`, made on first use. A tool function is made when
  // code first names it, and each costs as little as it can: one arrow function (nothing to
  // construct, so no `prototype` object to make and freeze), its name, and this prototype.
  const rawOf = new WeakMapCtor();
  const toolPrototype = create(Function.prototype);
  defineProperty(toolPrototype, "raw", {
    __proto__: null,
    get: function () {
      let raw = apply(weakGet, rawOf, [this]);
      if (raw === undefined) {
        // The name of the tool this is (a call with another `this` names a tool of its own
        // choosing, which `callMCPTool` allows anyway: the host decides what may be called).
        const name = StringCtor(this.name);
        raw = freeze((args) => requestTool(name, args, true));
        apply(weakSet, rawOf, [this, raw]);
      }
      return raw;
    },
    enumerable: false,
    configurable: false,
  });
  freeze(toolPrototype);

  function tool(name) {
    const call = (args) => requestTool(name, args, false);
    setPrototypeOf(call, toolPrototype);
    defineProperty(call, "name", { __proto__: null, value: name });
    return freeze(call);
  }

  // Names the language itself reads on any object (`await` reads `then`, `JSON.stringify` reads
  // `toJSON`, string conversion `toString` and `valueOf`): `undefined` on `tools` and its
  // namespaces unless a server or tool has that name.
  const reserved = create(null);
  const reservedNames = ["then", "toJSON", "toString", "valueOf", "constructor", "__proto__", "toLocaleString", "hasOwnProperty", "isPrototypeOf", "propertyIsEnumerable"];
  for (let i = 0; i < reservedNames.length; i++) reserved[reservedNames[i]] = true;

  // `tools` and each `tools.<server>`: resolved as code names them, from the names the host
  // lists (`listNames`), so an execution sets up nothing per tool. Any name reads as something
  // code can call: a server's namespace, a tool function. A name the host does not know reaches
  // it when called, and the host answers with what exists and what comes close (a server still
  // starting is waited for first). Listing (`Object.keys`, `in`, `Object.isFrozen`) is truthful:
  // the names the host lists, made into frozen properties on first use (a proxy may only report
  // properties its target has once it says it is frozen). One handler serves every namespace;
  // what is a namespace's own hangs off its target.
  const lazyState = new WeakMapCtor();

  function lazy(scope) {
    // A function, so that calling a namespace (`tools.add(...)`, the server left out) reaches
    // the host like any unknown name; without its own `name`, `length` or prototype.
    const target = () => {};
    delete target.name;
    delete target.length;
    setPrototypeOf(target, null);
    apply(weakSet, lazyState, [target, { __proto__: null, scope: scope, made: create(null), known: undefined, settled: false }]);
    if (scope === null) rootTarget = target;
    return new ProxyCtor(target, lazyHandler);
  }

  function knows(state, name) {
    if (state.known === undefined) {
      state.known = create(null);
      const names = listNames(state.scope);
      for (let i = 0; isArray(names) && i < names.length; i++) state.known[names[i]] = true;
    }
    return state.known[name] === true;
  }

  // The tool function, or the namespace, `name` is in `state`'s scope.
  function member(state, name) {
    if (state.made[name] === undefined) {
      state.made[name] = state.scope === null ? lazy(name) : tool(state.scope + "." + name);
    }
    return state.made[name];
  }

  // Before anything that must agree with the target: it gets every known name, and is frozen.
  function freezeListing(target) {
    const state = apply(weakGet, lazyState, [target]);
    if (state.settled) return;
    const names = listNames(state.scope);
    for (let i = 0; isArray(names) && i < names.length; i++) {
      defineProperty(target, names[i], { __proto__: null, value: member(state, names[i]), writable: false, enumerable: true, configurable: false });
    }
    freeze(target);
    state.settled = true;
  }

  const lazyHandler = freeze({
    __proto__: null,
    get: function (target, property) {
      if (typeof property !== "string") return undefined;
      const state = apply(weakGet, lazyState, [target]);
      if (reserved[property] === true && !knows(state, property)) return undefined;
      return member(state, property);
    },
    has: function (target, property) {
      return typeof property === "string" && knows(apply(weakGet, lazyState, [target]), property);
    },
    // `tools.<name>(...)`: a tool named without its server goes as `name`; a server called as
    // if it were a tool goes as `<server>.` (no tool), and the host waits for the server and
    // answers with its tools.
    apply: function (target, _this, args) {
      const scope = apply(weakGet, lazyState, [target]).scope;
      if (scope === null) return requestTool("tools", args[0], false);
      const server = knows(apply(weakGet, lazyState, [rootTarget]), scope);
      return requestTool(server ? scope + "." : scope, args[0], false);
    },
    ownKeys: function (target) {
      freezeListing(target);
      return ownKeys(target);
    },
    getOwnPropertyDescriptor: function (target, property) {
      freezeListing(target);
      return getOwnPropertyDescriptor(target, property);
    },
    defineProperty: function (target, property, descriptor) {
      freezeListing(target);
      return reflectDefineProperty(target, property, descriptor);
    },
    isExtensible: function (target) {
      freezeListing(target);
      return false;
    },
    preventExtensions: function (target) {
      freezeListing(target);
      return true;
    },
    set: function () {
      return false;
    },
    deleteProperty: function () {
      return false;
    },
    setPrototypeOf: function (_target, prototype) {
      return prototype === null;
    },
  });

  let rootTarget;
  const tools = lazy(null);

  // Formats a value the way a developer expects in a log line; never throws.
  function describe(value) {
    try {
      if (typeof value === "string") return value;
      if (value === undefined) return "undefined";
      if (typeof value === "function") return "[Function " + (value.name || "anonymous") + "]";
      if (typeof value === "symbol" || typeof value === "bigint") return StringCtor(value);
      if (isError(value)) {
        const stack = value.stack;
        const head = value.name + ": " + value.message;
        return typeof stack === "string" && stack.length > 0 ? head + "\n" + stack : head;
      }
      if (typeof value !== "object" || value === null) return StringCtor(value);
      const seen = new SetCtor();
      const text = stringify(value, function (_key, item) {
        if (typeof item === "bigint") return StringCtor(item) + "n";
        if (typeof item === "function") return "[Function " + (item.name || "anonymous") + "]";
        if (typeof item === "number" && item - item !== 0) return StringCtor(item);
        if (item === undefined) return undefined;
        if (typeof item === "object" && item !== null) {
          if (apply(setHas, seen, [item])) return "[Circular]";
          apply(setAdd, seen, [item]);
          const prototype = getPrototypeOf(item);
          if (prototype !== ObjectPrototype && prototype !== ArrayPrototype && prototype !== null && !isArray(item)) {
            // A Map, a Set, an Error... shown with what they hold, as a result would carry them.
            try {
              return convertObject(item);
            } catch (_) {
              return "[" + (kindOf(item) || "object") + "]";
            }
          }
        }
        return item;
      });
      return text === undefined ? StringCtor(value) : text;
    } catch (error) {
      try {
        return StringCtor(value);
      } catch (_) {
        return "[unprintable value]";
      }
    }
  }

  function printer(stream) {
    return function () {
      let line = "";
      for (let i = 0; i < arguments.length; i++) {
        if (i > 0) line += " ";
        line += describe(arguments[i]);
      }
      log(stream, line);
    };
  }

  const console = freeze({
    log: printer(0),
    info: printer(1),
    warn: printer(2),
    error: printer(3),
    debug: printer(4),
    trace: printer(4),
  });

  function setTimeout(callback, delay) {
    if (typeof callback !== "function") throw new ErrorCtor("setTimeout needs a function");
    const args = [];
    for (let i = 2; i < arguments.length; i++) append(args, arguments[i]);
    const id = startTimer(+delay || 0);
    timers[id] = { callback: callback, args: args };
    return id;
  }

  function clearTimeout(id) {
    if (timers[id] === undefined) return;
    delete timers[id];
    stopTimer(id);
  }

  function callMCPTool(name, args, options) {
    const raw = options !== undefined && options !== null && options.raw === true;
    return requestTool(StringCtor(name), args, raw);
  }

  function searchTools(query, limit) {
    const text = query === undefined ? "" : StringCtor(query);
    if (limit !== undefined && limit !== null && typeof limit !== "number") {
      return rejected("searchTools: limit must be a positive number, got " + describe(limit));
    }
    const most = limit === undefined ? null : limit;
    return request(function () {
      return search(text, most);
    });
  }

  function describeTools(names) {
    const list = isArray(names) ? names : [names];
    const strings = [];
    for (let i = 0; i < list.length; i++) append(strings, StringCtor(list[i]));
    return request(function () {
      return describeNames(strings);
    });
  }

  // `resources.<server>` and `prompts.<server>`: what a server offers besides tools, for any
  // server name (its name in code or as configured); the host answers a name it does not know
  // with the servers there are. Each request travels as its parts, so nothing the guest's
  // values do can change which server or method is asked.
  function ask(server, method, subject, args) {
    let json = null;
    if (args !== undefined && args !== null) {
      try {
        json = toJson(args, "args");
      } catch (error) {
        return rejected("the arguments cannot be sent as JSON: " + describe(error));
      }
      if (typeof json !== "string") return rejected("the arguments cannot be sent as JSON: " + json.problem);
    }
    return request(function () {
      return askServer(server, method, subject, json);
    });
  }

  // `store`, `results` and `handle`: what the host keeps for this MCP session across
  // executions. The arguments travel as one JSON array, so the host checks them all.
  function askKept(name, list) {
    let json;
    try {
      json = toJson(list, "args");
    } catch (error) {
      return rejected(name + ": the arguments cannot be sent as JSON: " + describe(error));
    }
    if (typeof json !== "string") return rejected(name + ": the arguments cannot be sent as JSON: " + json.problem);
    return request(function () {
      return askSession(name, json);
    });
  }

  const store = freeze({
    __proto__: null,
    get: freeze(function get(key) { return askKept("store.get", [key]); }),
    set: freeze(function set(key, value) {
      if (value === undefined) return rejected("store.set(key, value): value is undefined; store null, or store.delete(key)");
      return askKept("store.set", [key, value]);
    }),
    delete: freeze(function (key) { return askKept("store.delete", [key]); }),
    keys: freeze(function keys() { return askKept("store.keys", []); }),
  });

  const results = freeze({
    __proto__: null,
    get: freeze(function get(handle, options) {
      return askKept("results.get", [handle, options === undefined ? null : options]);
    }),
  });

  function handle(value) {
    if (value === undefined) return rejected("handle(value): value is undefined; pass the value to keep");
    return askKept("handle", [value]);
  }

  // `emit(block)`: an MCP content block for the answer, after its text. The host checks the
  // block and counts it against the execution's limits; a refusal rejects the promise.
  function emit(block) {
    if (block === undefined || block === null || typeof block !== "object") {
      return rejected("emit(block): block must be an object like {type: \"image\", data: <base64>, mimeType: \"image/png\"}, got " + describe(block));
    }
    let json;
    try {
      json = toJson(block, "block");
    } catch (error) {
      return rejected("emit(block): the block cannot be sent as JSON: " + describe(error));
    }
    if (typeof json !== "string") return rejected("emit(block): the block cannot be sent as JSON: " + json.problem);
    return request(function () {
      return emitBlock(json);
    });
  }

  // `progress(done, total?, message?)`: how far the program is, for the client while it runs.
  // Returns at once; the engine passes the latest on at most every 50 ms.
  function progress(done, total, message) {
    if (typeof done !== "number") throw new TypeErrorCtor("progress(done, total?, message?): done must be a number, got " + typeof done);
    if (total !== undefined && total !== null && typeof total !== "number") {
      throw new TypeErrorCtor("progress(done, total?, message?): total must be a number, got " + typeof total);
    }
    const text = message === undefined || message === null ? null : StringCtor(message);
    const problem = reportProgress(done, total === undefined ? null : total, text);
    if (problem !== undefined && problem !== null) throw new TypeErrorCtor(problem);
  }

  // `llm.ask` and `llm.think`: a completion from the model's LLM, asked of the host like the
  // rest; the host checks the arguments, the budgets and the allowed system prompts.
  function askModel(name, list) {
    let json;
    try {
      json = toJson(list, "args");
    } catch (error) {
      return rejected(name + ": the arguments cannot be sent as JSON: " + describe(error));
    }
    if (typeof json !== "string") return rejected(name + ": the arguments cannot be sent as JSON: " + json.problem);
    return request(function () {
      return askLlm(name, json);
    });
  }

  const llm = freeze({
    __proto__: null,
    ask: freeze(function ask(prompt, options) {
      return askModel("llm.ask", [prompt === undefined ? null : prompt, options === undefined ? null : options]);
    }),
    think: freeze(function think(request) {
      return askModel("llm.think", [request === undefined ? null : request]);
    }),
  });

  function resourcesOf(server) {
    return {
      list: function () { return ask(server, "resources/list", null, null); },
      templates: function () { return ask(server, "resources/templates/list", null, null); },
      read: function (uri) {
        if (typeof uri !== "string") return rejected("resources." + server + ".read(uri): uri must be a string, got " + describe(uri));
        return ask(server, "resources/read", uri, null);
      },
    };
  }

  function promptsOf(server) {
    return {
      list: function () { return ask(server, "prompts/list", null, null); },
      get: function (name, args) {
        if (typeof name !== "string") return rejected("prompts." + server + ".get(name, args): name must be a string, got " + describe(name));
        return ask(server, "prompts/get", name, args);
      },
    };
  }

  function byServer(make) {
    const made = create(null);
    return new ProxyCtor(freeze(create(null)), {
      __proto__: null,
      get: function (_target, key) {
        if (typeof key !== "string" || reserved[key] === true) return undefined;
        let scope = made[key];
        if (scope === undefined) {
          scope = make(key);
          const methods = ownKeys(scope);
          for (let i = 0; i < methods.length; i++) freeze(scope[methods[i]]);
          freeze(scope);
          made[key] = scope;
        }
        return scope;
      },
    });
  }

  const globals = {
    tools: tools,
    resources: byServer(resourcesOf),
    prompts: byServer(promptsOf),
    callMCPTool: freeze(callMCPTool),
    searchTools: freeze(searchTools),
    describeTools: freeze(describeTools),
    store: store,
    results: results,
    handle: freeze(handle),
    emit: freeze(emit),
    progress: freeze(progress),
    llm: llm,
    console: console,
    setTimeout: freeze(setTimeout),
    clearTimeout: freeze(clearTimeout),
  };
  const names = ownKeys(globals);
  for (let i = 0; i < names.length; i++) {
    defineProperty(globalThis, names[i], { __proto__: null, value: globals[names[i]], writable: false, enumerable: false, configurable: false });
  }

  // Values JSON cannot carry. `JSON.stringify` turns a Map, a Set or a Promise into `{}`, NaN into
  // `null`, and leaves functions out, without a word. So each value it meets goes through
  // `convert` first: what has one faithful form as JSON gets it (a Map with string or number
  // keys becomes an object, a Set or a typed array an array, an Error `{ name, message }`), and
  // what has none is refused, naming what it is and what to send instead. The walk is JSON's own;
  // only on a refusal is the value walked again, to say where in it the refused part is.
  const UNSENDABLE = create(null);

  function unsendable(what, instead) {
    const refusal = create(null);
    refusal.brand = UNSENDABLE;
    refusal.what = what;
    refusal.instead = instead;
    refusal.path = undefined;
    return refusal;
  }

  function convert(_key, value) {
    const type = typeof value;
    if (type === "object") {
      if (value === null) return null;
      const prototype = getPrototypeOf(value);
      if (prototype === ObjectPrototype || prototype === ArrayPrototype || prototype === null || isArray(value)) return value;
      return convertObject(value);
    }
    if (type === "string" || type === "boolean" || type === "undefined") return value;
    if (type === "number") {
      if (value - value === 0) return value;
      throw unsendable(StringCtor(value), "JSON has no NaN or Infinity: check the computation (a division by zero, a number read from text that is not one), or send null or a string");
    }
    if (type === "function") throw unsendable("a function", "call it and send what it returns, or leave it out");
    if (type === "bigint") throw unsendable("the BigInt " + StringCtor(value) + "n", "send Number(value) when it fits, or String(value)");
    throw unsendable("a symbol", "send String(symbol)");
  }

  function convertObject(value) {
    const kind = kindOf(value);
    if (kind === "map") {
      const object = create(null);
      apply(mapForEach, value, [function (item, key) {
        if (typeof key !== "string" && !(typeof key === "number" && key - key === 0)) {
          throw unsendable("a Map with a key that is neither a string nor a number (" + describe(key) + ")", "send [...map], its [key, value] pairs");
        }
        defineProperty(object, StringCtor(key), { __proto__: null, value: item, writable: true, enumerable: true, configurable: true });
      }]);
      return object;
    }
    if (kind === "set") {
      const array = [];
      apply(setForEach, value, [function (item) { append(array, item); }]);
      return array;
    }
    if (kind === "typed") {
      const array = [];
      const length = apply(typedLength, value, []);
      for (let i = 0; i < length; i++) append(array, value[i]);
      return array;
    }
    if (kind === "error") {
      const object = create(null);
      object.name = StringCtor(value.name);
      object.message = StringCtor(value.message);
      const own = keys(value);
      for (let i = 0; i < own.length; i++) {
        defineProperty(object, own[i], { __proto__: null, value: value[own[i]], writable: true, enumerable: true, configurable: true });
      }
      return object;
    }
    if (kind === "promise") throw unsendable("a Promise (a call or an async function that was not awaited)", "await it, or `await Promise.all(...)` several");
    if (kind === "weak") throw unsendable("a WeakMap, WeakSet or WeakRef, whose contents cannot be listed", "keep the data in a Map, a Set or an object");
    if (kind === "buffer") throw unsendable("an ArrayBuffer or a DataView", "send Array.from(new Uint8Array(buffer))");
    if (kind === "regexp") throw unsendable("a RegExp", "send String(regexp)");
    for (let i = 0; i < wrapperValueOf.length; i++) {
      try {
        apply(wrapperValueOf[i], value, []);
        return value;
      } catch (_) {}
    }
    if (keys(value).length > 0) return value;
    let name = "a class";
    try {
      const constructor = value.constructor;
      if (typeof constructor === "function" && typeof constructor.name === "string" && constructor.name !== "") name = constructor.name;
    } catch (_) {}
    throw unsendable("an instance of " + name + " with no own enumerable properties, which JSON would send as {}", "build a plain object of what you need, such as { name: item.name }");
  }

  // Where a key leads from its holder: `.name`, `["a key"]`, `[0]`.
  function segment(holder, key) {
    if (isArray(holder)) return "[" + key + "]";
    let identifier = key.length > 0;
    for (let i = 0; identifier && i < key.length; i++) {
      const c = key.charCodeAt(i);
      identifier = c === 36 || c === 95 || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (i > 0 && c >= 48 && c <= 57);
    }
    return identifier ? "." + key : "[" + stringify(key) + "]";
  }

  // The refusal `convert` makes, with the path to the refused part from `root`, or `undefined`
  // when the second walk meets none (a getter that answered otherwise the second time). A value
  // met again inside itself is refused as a cycle.
  function locate(value, root) {
    const paths = new WeakMapCtor();
    try {
      stringify(value, function (key, item) {
        const holder = apply(weakGet, paths, [this]);
        const path = holder === undefined ? root : holder + segment(this, key);
        let converted;
        try {
          converted = convert(key, item);
        } catch (error) {
          if (typeof error === "object" && error !== null && error.brand === UNSENDABLE) error.path = path;
          throw error;
        }
        if (typeof converted === "object" && converted !== null) {
          const seen = apply(weakGet, paths, [converted]);
          if (seen !== undefined && (path === seen || apply(startsWith, path, [seen + "."]) || apply(startsWith, path, [seen + "["]))) {
            const refusal = unsendable("the value at " + seen + " again, inside itself (a cycle)", "send a copy without the reference back");
            refusal.path = path;
            throw refusal;
          }
          if (seen === undefined) apply(weakSet, paths, [converted, path]);
        }
        return converted;
      });
    } catch (error) {
      if (typeof error === "object" && error !== null && error.brand === UNSENDABLE) return error;
    }
    return undefined;
  }

  // `value` as JSON text, or `{ problem }` naming the part JSON cannot carry and what to send
  // instead; `root` names the value in that message (`result`, `args`). Throws what the guest's
  // own getters and `toJSON` throw.
  function toJson(value, root) {
    let text;
    try {
      text = stringify(value === undefined ? null : value, convert);
    } catch (error) {
      const refusal = locate(value, root);
      if (refusal === undefined) throw error;
      const problem = create(null);
      problem.problem = (refusal.path === undefined ? root : refusal.path) + " is " + refusal.what + ": " + refusal.instead;
      return problem;
    }
    return text === undefined ? "null" : text;
  }

  // What the host reports about a thrown value: an object only the host sees, with `name`,
  // `message` and `stack` as text and `recorded`, the stack QuickJS recorded when the error was
  // made (undefined for anything but an error). Reads the guest's getters; never throws, except
  // when the engine stops the guest (which no catch sees).
  function explain(error) {
    let name = "";
    let message = "";
    let stack = "";
    let recorded = undefined;
    try {
      if (isError(error)) {
        recorded = apply(recordedStack, error, []);
        name = StringCtor(error.name);
        message = StringCtor(error.message);
        const own = error.stack;
        stack = typeof own === "string" ? own : "";
      } else if (typeof error === "object" && error !== null && typeof error.message === "string") {
        message = error.message;
        name = typeof error.name === "string" ? error.name : "";
      } else {
        message = "Uncaught " + describe(error);
      }
    } catch (_) {
      message = "Uncaught exception (its properties could not be read)";
    }
    const explained = create(null);
    explained.name = name;
    explained.message = message;
    explained.stack = stack;
    explained.recorded = recorded;
    return explained;
  }

  return freeze({ settle: settle, fire: fire, toJson: toJson, explain: explain });
}
