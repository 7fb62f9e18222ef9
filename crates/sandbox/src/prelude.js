// The guest's view of the host, set up before guest code runs. Everything the bridge relies on
// is captured here first, so guest code that tampers with built-ins afterwards cannot reach the
// pending-call table or forge answers: that table lives only in this closure.
//
// It is a module (strict by definition) so that it is compiled once per process and loaded as
// bytecode into each runtime.
export default function prelude(send, log, startTimer, stopTimer) {
  const PromiseCtor = Promise;
  const ErrorCtor = Error;
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const freeze = Object.freeze;
  const defineProperty = Object.defineProperty;
  const isArray = Array.isArray;
  const StringCtor = String;
  const ProxyCtor = Proxy;
  const create = Object.create;
  const ownKeys = Reflect.ownKeys;
  const apply = Reflect.apply;

  // Stack traces keep up to 64 frames and cannot be reconfigured. Beyond better positions in
  // guest errors, this is how a stack overflow is told from a guest's imitation of one: the
  // engine's own overflow error gets a long trace built at the bottom of the stack, where the
  // host's allocator sees it (see alloc.rs).
  Error.stackTraceLimit = 64;
  defineProperty(Error, "stackTraceLimit", {
    get: function () { return 64; },
    set: function () {},
    enumerable: false,
    configurable: false,
  });
  defineProperty(Error, "prepareStackTrace", {
    get: function () { return undefined; },
    set: function () {},
    enumerable: false,
    configurable: false,
  });

  const pending = create(null);
  const timers = create(null);

  function request(kind, payload) {
    let text;
    try {
      text = stringify(payload);
    } catch (error) {
      return PromiseCtor.reject(new ErrorCtor("the arguments cannot be sent as JSON: " + describe(error)));
    }
    return new PromiseCtor(function (resolve, reject) {
      const id = send(kind, text === undefined ? "null" : text);
      pending[id] = { resolve: resolve, reject: reject };
    });
  }

  // Called by the engine with each answer.
  function settle(id, ok, text) {
    const waiter = pending[id];
    if (waiter === undefined) return;
    delete pending[id];
    if (ok) waiter.resolve(parse(text));
    else waiter.reject(new ErrorCtor(text));
  }

  // Called by the engine when a timer is due.
  function fire(id) {
    const timer = timers[id];
    if (timer === undefined) return;
    delete timers[id];
    apply(timer.callback, undefined, timer.args);
  }

  function tool(name) {
    const call = function (args) {
      return request("tool", { name: name, args: args === undefined ? null : args, raw: false });
    };
    call.raw = function (args) {
      return request("tool", { name: name, args: args === undefined ? null : args, raw: true });
    };
    defineProperty(call, "name", { value: name });
    return freeze(call);
  }

  function dynamicNamespace(namespace) {
    const made = create(null);
    return new ProxyCtor(freeze(create(null)), {
      get: function (_target, property) {
        if (typeof property !== "string" || property === "then") return undefined;
        if (made[property] === undefined) made[property] = tool(namespace + "." + property);
        return made[property];
      },
      has: function () {
        return true;
      },
      set: function () {
        return false;
      },
      defineProperty: function () {
        return false;
      },
      deleteProperty: function () {
        return false;
      },
    });
  }

  // Called once the program is known, with the names it may call.
  function install(manifest) {
    const tools = create(null);
    for (let i = 0; i < manifest.length; i++) {
      const namespace = manifest[i];
      if (namespace.tools === null) {
        tools[namespace.name] = dynamicNamespace(namespace.name);
      } else {
        const server = create(null);
        for (let j = 0; j < namespace.tools.length; j++) {
          server[namespace.tools[j]] = tool(namespace.name + "." + namespace.tools[j]);
        }
        tools[namespace.name] = freeze(server);
      }
    }
    defineProperty(globalThis, "tools", { value: freeze(tools), writable: false, enumerable: false, configurable: false });
  }

  // Formats a value the way a developer expects in a log line; never throws.
  function describe(value) {
    try {
      if (typeof value === "string") return value;
      if (value === undefined) return "undefined";
      if (typeof value === "function") return "[Function " + (value.name || "anonymous") + "]";
      if (typeof value === "symbol" || typeof value === "bigint") return StringCtor(value);
      if (value instanceof ErrorCtor) {
        const stack = value.stack;
        const head = value.name + ": " + value.message;
        return typeof stack === "string" && stack.length > 0 ? head + "\n" + stack : head;
      }
      if (typeof value !== "object" || value === null) return StringCtor(value);
      const seen = [];
      const text = stringify(value, function (_key, item) {
        if (typeof item === "bigint") return StringCtor(item) + "n";
        if (typeof item === "function") return "[Function " + (item.name || "anonymous") + "]";
        if (item === undefined) return undefined;
        if (typeof item === "object" && item !== null) {
          if (seen.indexOf(item) !== -1) return "[Circular]";
          seen.push(item);
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
    for (let i = 2; i < arguments.length; i++) args.push(arguments[i]);
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
    return request("tool", { name: StringCtor(name), args: args === undefined ? null : args, raw: raw });
  }

  function searchTools(query, limit) {
    return request("search", { query: query === undefined ? "" : StringCtor(query), limit: limit === undefined ? null : limit });
  }

  function describeTools(names) {
    const list = isArray(names) ? names : [names];
    const strings = [];
    for (let i = 0; i < list.length; i++) strings.push(StringCtor(list[i]));
    return request("describe", { names: strings });
  }

  const globals = {
    callMCPTool: freeze(callMCPTool),
    searchTools: freeze(searchTools),
    describeTools: freeze(describeTools),
    console: console,
    setTimeout: freeze(setTimeout),
    clearTimeout: freeze(clearTimeout),
  };
  const names = ownKeys(globals);
  for (let i = 0; i < names.length; i++) {
    defineProperty(globalThis, names[i], { value: globals[names[i]], writable: false, enumerable: false, configurable: false });
  }

  // The result as JSON text, or a thrown error that names why it cannot be.
  function toJson(value) {
    const text = stringify(value === undefined ? null : value);
    return text === undefined ? "null" : text;
  }

  // The error as {name, message, stack}; reads properties without trusting them.
  function explain(error) {
    let name = "";
    let message = "";
    let stack = "";
    try {
      if (error instanceof ErrorCtor) {
        name = StringCtor(error.name);
        message = StringCtor(error.message);
        stack = typeof error.stack === "string" ? error.stack : "";
      } else if (typeof error === "object" && error !== null && typeof error.message === "string") {
        message = error.message;
        name = typeof error.name === "string" ? error.name : "";
      } else {
        message = "Uncaught " + describe(error);
      }
    } catch (_) {
      message = "Uncaught exception (its properties could not be read)";
    }
    return stringify({ name: name, message: message, stack: stack });
  }

  return freeze({ install: install, settle: settle, fire: fire, toJson: toJson, explain: explain });
}
