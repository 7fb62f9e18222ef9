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
export default function prelude(callTool, search, describeNames, log, startTimer, stopTimer, listNames) {
  const PromiseCtor = Promise;
  const ErrorCtor = Error;
  const SetCtor = Set;
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const freeze = Object.freeze;
  const defineProperty = Object.defineProperty;
  const isArray = Array.isArray;
  const isError = Error.isError;
  const StringCtor = String;
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
    let text;
    try {
      text = stringify(args === undefined ? null : args);
    } catch (error) {
      return rejected("the arguments cannot be sent as JSON: " + describe(error));
    }
    const json = text === undefined ? "null" : text;
    return request(function () {
      return callTool(name, json, raw);
    });
  }

  // Called by the engine with each answer.
  function settle(id, ok, text) {
    const waiter = pending[id];
    if (waiter === undefined) return;
    delete pending[id];
    if (ok) {
      waiter.resolve(parse(text));
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
  // properties its target has once it says it is frozen).
  function lazy(prefix, scope, make) {
    // A function, so that calling a namespace (`tools.add(...)`, the server left out) reaches
    // the host like any unknown name; without its own `name`, `length` or prototype.
    const target = () => {};
    delete target.name;
    delete target.length;
    setPrototypeOf(target, null);
    const made = create(null);
    let known;
    let settled = false;
    function knows(name) {
      if (known === undefined) {
        known = create(null);
        const names = listNames(scope);
        for (let i = 0; isArray(names) && i < names.length; i++) known[names[i]] = true;
      }
      return known[name] === true;
    }
    function get(name) {
      if (made[name] === undefined) made[name] = make(prefix + name);
      return made[name];
    }
    // Before anything that must agree with the target: it gets every known name, and is frozen.
    function settle() {
      if (settled) return;
      const names = listNames(scope);
      for (let i = 0; isArray(names) && i < names.length; i++) {
        defineProperty(target, names[i], { __proto__: null, value: get(names[i]), writable: false, enumerable: true, configurable: false });
      }
      freeze(target);
      settled = true;
    }
    return new ProxyCtor(target, {
      get: function (_target, property) {
        if (typeof property !== "string") return undefined;
        if (reserved[property] === true && !knows(property)) return undefined;
        return get(property);
      },
      has: function (_target, property) {
        return typeof property === "string" && knows(property);
      },
      apply: function (_target, _this, args) {
        return requestTool(scope === null ? "tools" : scope, args[0], false);
      },
      ownKeys: function (target) {
        settle();
        return ownKeys(target);
      },
      getOwnPropertyDescriptor: function (target, property) {
        settle();
        return getOwnPropertyDescriptor(target, property);
      },
      defineProperty: function (target, property, descriptor) {
        settle();
        return reflectDefineProperty(target, property, descriptor);
      },
      isExtensible: function () {
        settle();
        return false;
      },
      preventExtensions: function () {
        settle();
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
  }

  const tools = lazy("", null, function (server) {
    return lazy(server + ".", server, tool);
  });

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
        if (item === undefined) return undefined;
        if (typeof item === "object" && item !== null) {
          if (apply(setHas, seen, [item])) return "[Circular]";
          apply(setAdd, seen, [item]);
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

  const globals = {
    tools: tools,
    callMCPTool: freeze(callMCPTool),
    searchTools: freeze(searchTools),
    describeTools: freeze(describeTools),
    console: console,
    setTimeout: freeze(setTimeout),
    clearTimeout: freeze(clearTimeout),
  };
  const names = ownKeys(globals);
  for (let i = 0; i < names.length; i++) {
    defineProperty(globalThis, names[i], { __proto__: null, value: globals[names[i]], writable: false, enumerable: false, configurable: false });
  }

  // The result as JSON text, or a thrown error that names why it cannot be.
  function toJson(value) {
    const text = stringify(value === undefined ? null : value);
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
