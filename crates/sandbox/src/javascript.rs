//! The JavaScript/TypeScript engine: one fresh QuickJS runtime per execution.
//!
//! The guest program runs as the body of an async function. Everything it asks of the outside —
//! tool calls, discovery, console lines, timers — goes through a handful of native functions that
//! only queue messages; the loop in [`execute`] turns them into [`EngineEvent`]s, feeds host replies
//! back in, fires timers, and decides how the execution ended. Every limit is observed here, by
//! the engine, never taken from what the guest throws: the interrupt handler stops a busy guest at
//! its deadline, the allocator refuses memory past the heap limit, and the native functions count
//! console bytes and calls.
//!
//! Every string that leaves the guest is read through [`GuestText`] and every JSON text through
//! [`guest_json`]: a lone surrogate (half of an emoji cut by `.slice()`) becomes U+FFFD there,
//! the one place guest text becomes the host's (see `toolweave_jsonrpc::surrogates`).
//!
//! Nothing the guest throws decides an error's kind. A syntax error is one the compiler found
//! before any guest code ran (see `transpile.rs`); a stack overflow is one whose error QuickJS
//! made at the bottom of the allowed stack, as the allocator saw (see `alloc.rs`). Thrown errors
//! are read through the prelude's `explain`, which calls nothing the guest can replace.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, FromJs, Function, Module, Object, Persistent,
    Promise, Runtime, TypedArray, WriteOptions,
};
use serde_json::Value;

use crate::alloc::{Budget, LimitedAllocator, stack_address};
use crate::transpile::{Compiler, SCRIPT_NAME, Transpiled, check_nesting, compile_error};
use crate::{
    CancelFlag, EngineError, EngineEvent, EngineLimits, ExecuteRequest, HostCall, HostReply,
    HostRequest, LogStream, MAX_VALUE_DEPTH, Manifest, Outcome, Replies, Stats,
};
use crate::{hints, program, report};
use toolweave_jsonrpc::surrogates::{well_formed_json, well_formed_text};

/// The host's view of the guest, evaluated before guest code runs.
const PRELUDE: &str = include_str!("prelude.js");
/// The module name the prelude's frames carry in stack traces.
const PRELUDE_NAME: &str = "toolweave-prelude.js";
/// The web platform's globals QuickJS lacks (`URL`, `TextEncoder`, `structuredClone`, `crypto`,
/// ...) and the guards where it would answer wrongly without a word, evaluated after the prelude.
const WEB: &str = include_str!("web.js");
const WEB_NAME: &str = "toolweave-web.js";
/// The most random bytes one `crypto.getRandomValues` fills, as the standard says.
const MAX_RANDOM_BYTES: usize = 65_536;
/// Requests other than tool calls (`searchTools`, `describeTools`) one execution may make.
const MAX_DISCOVERY_CALLS: u32 = 1000;
/// Timers one execution may have pending at once; one more ends the execution with
/// [`EngineError::TimerLimit`].
const MAX_TIMERS: usize = 10_000;
/// Rejected promises nothing awaited that one execution keeps track of, and warns of.
const MAX_TRACKED_REJECTIONS: usize = 100;
const MAX_REJECTION_WARNINGS: usize = 5;
/// QuickJS's message for a real stack overflow.
const STACK_OVERFLOW_MESSAGE: &str = "Maximum call stack size exceeded";

/// Why the engine stopped the guest early. Set only by the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Timeout,
    Cancelled,
    LogLimit,
    ToolCallLimit,
    DiscoveryLimit,
    TimerLimit,
}

/// State shared between the native functions the guest calls, the interrupt handler and the
/// loop in [`Prepared::execute`]. One per runtime, so one per execution.
struct Shared {
    /// The execution's limits, set when it starts.
    limits: Cell<EngineLimits>,
    /// The heap budget, which also holds the deadline and cancel flag.
    budget: Rc<Budget>,
    events: RefCell<Vec<EngineEvent>>,
    /// Requests the engine rejects itself (malformed arguments), as (id, message).
    local_replies: RefCell<Vec<(u64, String)>>,
    next_id: Cell<u64>,
    outstanding: RefCell<HashSet<u64>>,
    tool_calls: Cell<u32>,
    discovery_calls: Cell<u32>,
    log_bytes: Cell<usize>,
    timers: RefCell<Timers>,
    stop: Cell<Option<Stop>>,
    /// The names the program may call, set when it starts; `tools` reads it as code names them.
    manifest: RefCell<Arc<Manifest>>,
    /// Promises rejected with no handler yet, kept alive until the end (see [`Rejection`]).
    rejections: RefCell<Vec<Rejection>>,
    /// `progress(...)` reported faster than the host is told of it.
    progress: RefCell<crate::ProgressGate>,
}

/// A promise that was rejected while nothing waited for it. Kept alive, so its address names it
/// until the end; emptied before the runtime is dropped.
struct Rejection {
    promise: usize,
    _kept: Persistent<rquickjs::Value<'static>>,
    reason: Persistent<rquickjs::Value<'static>>,
}

impl Shared {
    fn new(budget: Rc<Budget>) -> Self {
        Self {
            limits: Cell::new(EngineLimits {
                timeout: Duration::ZERO,
                memory_bytes: 0,
                stack_bytes: 0,
                max_log_bytes: 0,
                max_result_bytes: 0,
                max_tool_calls: 0,
            }),
            budget,
            events: RefCell::new(Vec::new()),
            local_replies: RefCell::new(Vec::new()),
            next_id: Cell::new(1),
            outstanding: RefCell::new(HashSet::new()),
            tool_calls: Cell::new(0),
            discovery_calls: Cell::new(0),
            log_bytes: Cell::new(0),
            timers: RefCell::new(Timers::default()),
            stop: Cell::new(None),
            manifest: RefCell::new(Arc::default()),
            rejections: RefCell::new(Vec::new()),
            progress: RefCell::new(crate::ProgressGate::default()),
        }
    }

    /// Queues the progress held back, before the engine waits for the host or ends.
    fn release_progress(&self) {
        if let Some(event) = self.progress.borrow_mut().release() {
            self.events.borrow_mut().push(event);
        }
    }

    fn stop(&self, reason: Stop) {
        if self.stop.get().is_none() {
            self.stop.set(Some(reason));
        }
    }

    fn limits(&self) -> EngineLimits {
        self.limits.get()
    }

    fn deadline(&self) -> Instant {
        self.budget.deadline()
    }

    /// Whether the guest must stop now; halts the budget when it must.
    fn should_stop(&self) -> bool {
        if self.budget.is_cancelled() {
            self.stop(Stop::Cancelled);
        } else if Instant::now() >= self.deadline() {
            self.stop(Stop::Timeout);
        }
        let stop = self.stop.get().is_some() || self.budget.limit_hit();
        if stop {
            self.budget.interrupt();
        }
        stop
    }
}

/// Pending `setTimeout` callbacks, by due time.
#[derive(Default)]
struct Timers {
    next_id: u64,
    due: BTreeSet<(Instant, u64)>,
    by_id: HashMap<u64, Instant>,
}

impl Timers {
    fn next_due(&self) -> Option<Instant> {
        self.due.first().map(|(at, _)| *at)
    }

    /// Removes and returns the ids of every timer due at `now`, in order.
    fn take_due(&mut self, now: Instant) -> Vec<u64> {
        let mut fired = Vec::new();
        while let Some(&(at, id)) = self.due.first() {
            if at > now {
                break;
            }
            self.due.pop_first();
            self.by_id.remove(&id);
            fired.push(id);
        }
        fired
    }
}

/// What the host makes of a thrown value (see the prelude's `explain`).
struct Explained {
    name: String,
    message: String,
    /// The stack as the guest presents it (its own `stack` property when it set one).
    stack: String,
    /// Whether this is the error QuickJS raised when the stack ran out: made where the allocator
    /// saw the bottom of the allowed stack, with QuickJS's name and message.
    overflow: bool,
}

impl Explained {
    fn unreadable(message: &str) -> Self {
        Self {
            name: String::new(),
            message: message.to_owned(),
            stack: String::new(),
            overflow: false,
        }
    }
}

/// Runs one JavaScript or TypeScript program to its outcome on the calling thread.
///
/// `emit` receives events as they happen; `replies` carries the host's answers (and a wake-up on
/// cancel); `cancel` stops the guest within milliseconds from any thread.
pub(crate) fn execute(
    request: ExecuteRequest,
    emit: &mut dyn FnMut(EngineEvent),
    replies: &dyn Replies,
    cancel: &CancelFlag,
) -> Outcome {
    let started = Instant::now();
    match Prepared::new(stack_address(), Compiler::ThisThread) {
        Ok(prepared) => prepared.execute(request, emit, replies, cancel).0,
        Err(error) => Outcome {
            result: Err(error),
            stats: Stats {
                duration: started.elapsed(),
                ..Stats::default()
            },
        },
    }
}

/// A JavaScript runtime made ready on the calling thread before its program is known, which
/// compiles its program on that same thread: for a process that runs one program on the thread
/// that prepared it, with [`crate::THREAD_STACK_HEADROOM`] to spare (a worker process).
pub struct PreparedJavaScript(Prepared);

/// What is left of a [`PreparedJavaScript`] after its execution: dropped later, or never by a
/// process about to exit.
pub struct SpentJavaScript {
    _spent: Spent,
}

impl PreparedJavaScript {
    /// Creates a runtime and context and compiles the prelude. `stack_top` is
    /// [`crate::stack_address`] on this thread, above the frames that will call
    /// [`PreparedJavaScript::execute`].
    pub fn new(stack_top: usize) -> Result<Self, EngineError> {
        Prepared::new(stack_top, Compiler::ThisThread).map(Self)
    }

    /// Runs one program in this runtime, as [`crate::execute`] does. The outcome is final; the rest
    /// can be dropped later.
    pub fn execute(
        self,
        request: ExecuteRequest,
        emit: &mut dyn FnMut(EngineEvent),
        replies: &dyn Replies,
        cancel: &CancelFlag,
    ) -> (Outcome, SpentJavaScript) {
        let (outcome, spent) = self.0.execute(request, emit, replies, cancel);
        (outcome, SpentJavaScript { _spent: spent })
    }
}

/// A runtime made ready before its program is known: context created, prelude compiled. Creating
/// one costs most of an execution's time, so an engine thread prepares the next while it waits.
pub(crate) struct Prepared {
    // Field order is drop order: the prelude's interface, then the context, then the runtime.
    host: Persistent<Object<'static>>,
    context: Context,
    runtime: Runtime,
    shared: Rc<Shared>,
    compiler: Compiler,
}

/// What is left of a runtime after its execution, dropped off the hot path.
pub(crate) struct Spent {
    _context: Context,
    _runtime: Runtime,
}

impl Prepared {
    /// Creates a runtime and context and compiles the prelude. `stack_top` is an address on the
    /// thread that will run the program, above the frames that will call [`Prepared::execute`];
    /// `compiler` says where its program is compiled.
    pub(crate) fn new(stack_top: usize, compiler: Compiler) -> Result<Self, EngineError> {
        let budget = Budget::new(stack_top);
        let shared = Rc::new(Shared::new(budget.clone()));
        let runtime = Runtime::new_with_alloc(LimitedAllocator::new(budget)).map_err(internal)?;
        {
            let shared = shared.clone();
            runtime.set_interrupt_handler(Some(Box::new(move || shared.should_stop())));
        }
        {
            let shared = shared.clone();
            runtime.set_host_promise_rejection_tracker(Some(Box::new(
                move |ctx, promise, reason, is_handled| {
                    track_rejection(&shared, &ctx, promise, reason, is_handled);
                },
            )));
        }
        let context = Context::full(&runtime).map_err(internal)?;
        let host = context.with(|ctx| {
            let factory = load_module(&ctx, &PRELUDE_BYTECODE, PRELUDE_NAME, PRELUDE)
                .map_err(|error| internal_message(format!("the prelude did not load: {error}")))?;
            let host = install_prelude(&ctx, factory, &shared)?;
            install_web(&ctx)?;
            Ok::<_, EngineError>(Persistent::save(&ctx, host))
        })?;
        Ok(Self {
            host,
            context,
            runtime,
            shared,
            compiler,
        })
    }

    /// Runs one program in this runtime. The outcome is final; the rest can be dropped later.
    pub(crate) fn execute(
        self,
        request: ExecuteRequest,
        emit: &mut dyn FnMut(EngineEvent),
        replies: &dyn Replies,
        cancel: &CancelFlag,
    ) -> (Outcome, Spent) {
        let started = Instant::now();
        let Self {
            host,
            context,
            runtime,
            shared,
            compiler,
        } = self;
        let limits = request.limits;
        shared.limits.set(limits);
        *shared.manifest.borrow_mut() = request.manifest.clone();
        shared.budget.arm(
            limits.memory_bytes,
            started + limits.timeout,
            cancel.clone(),
            limits.stack_bytes,
        );
        runtime.set_max_stack_size(limits.stack_bytes);
        // `transpile` turns a panic of the compiler into an error itself, before QuickJS sees the
        // program.
        let transpiled = compiler
            .transpile(&request.code, request.language)
            .and_then(|transpiled| {
                check_nesting(&request.code, &transpiled, limits.stack_bytes).map(|()| transpiled)
            });
        let result = match transpiled {
            Ok(transpiled) => {
                // A panic while the program runs or its result is converted (a bug of toolweave's
                // or of a library it uses; a panic in a native function reaches here once QuickJS
                // has returned) ends this execution with an error. Unwind safety: after a panic
                // the runtime is only dropped, with every value of it dropped before, inside
                // `with`, as the unwinding leaves `drive`.
                catch_unwind(AssertUnwindSafe(|| {
                    context.with(|ctx| {
                        drive(
                            ctx,
                            host,
                            &request,
                            &transpiled,
                            &shared,
                            emit,
                            replies,
                            cancel,
                        )
                    })
                }))
                .unwrap_or_else(|panic| {
                    Err(internal_message(format!(
                        "the JavaScript engine panicked: {}",
                        crate::panic_message(panic.as_ref())
                    )))
                })
            }
            Err(error) => {
                drop(host);
                Err(error)
            }
        };
        let outcome = Outcome {
            result,
            stats: Stats {
                duration: started.elapsed(),
                host_calls: shared.tool_calls.get() + shared.discovery_calls.get(),
                log_bytes: shared.log_bytes.get(),
                memory_peak_bytes: shared.budget.peak(),
            },
        };
        // What is kept of rejected promises goes while the runtime is whole.
        shared.rejections.borrow_mut().clear();
        // The interrupt handler and the rejection tracker hold the last other references to
        // `shared`; the runtime drops them.
        drop(shared);
        (
            outcome,
            Spent {
                _context: context,
                _runtime: runtime,
            },
        )
    }
}

/// Sets up the prelude, evaluates the program and runs its event loop to the end.
#[expect(
    clippy::too_many_arguments,
    reason = "one call site; the pieces of one execution"
)]
fn drive<'js>(
    ctx: Ctx<'js>,
    host: Persistent<Object<'static>>,
    request: &ExecuteRequest,
    transpiled: &Transpiled,
    shared: &Rc<Shared>,
    emit: &mut dyn FnMut(EngineEvent),
    replies: &dyn Replies,
    cancel: &CancelFlag,
) -> Result<Value, EngineError> {
    let host = host.restore(&ctx).map_err(internal)?;
    let prelude = PreludeFunctions {
        settle: host.get("settle").map_err(internal)?,
        fire: host.get("fire").map_err(internal)?,
        to_json: host.get("toJson").map_err(internal)?,
        explain: host.get("explain").map_err(internal)?,
    };
    let program = compile(&ctx, request, transpiled, shared, &prelude.explain)?;
    shared.events.borrow_mut().push(EngineEvent::Started);
    let promise = match program.call::<_, Promise<'js>>(()).catch(&ctx) {
        Ok(promise) => promise,
        Err(caught) => {
            flush(shared, emit);
            return Err(failure(
                &ctx,
                shared,
                request,
                transpiled,
                &prelude.explain,
                caught,
            ));
        }
    };
    let run = Program {
        request,
        transpiled,
        promise: &promise,
    };
    loop {
        // Run every job the last step made ready (promise reactions, async continuations),
        // handing each job's requests to the host as soon as it has made them.
        flush(shared, emit);
        while ctx.execute_pending_job() {
            flush(shared, emit);
            if shared.stop.get().is_some() || shared.budget.limit_hit() {
                break;
            }
        }
        if let Some(error) = limit_error(shared) {
            return Err(error);
        }
        match promise.state() {
            PromiseState::Resolved => return resolved(&ctx, shared, &run, &prelude, emit),
            PromiseState::Rejected => {
                return Err(rejected(&ctx, shared, &run, &prelude, emit));
            }
            PromiseState::Pending => {}
        }
        wait_for_host(&ctx, shared, &prelude, emit, replies, cancel)?;
    }
}

/// The prelude's functions the event loop calls.
struct PreludeFunctions<'js> {
    /// Settles the promise of a host call.
    settle: Function<'js>,
    /// Runs a timer's callback.
    fire: Function<'js>,
    /// The program's value as JSON.
    to_json: Function<'js>,
    /// What a thrown value says, for the model.
    explain: Function<'js>,
}

/// The program being run: what was asked, what it was compiled to, and its promise.
struct Program<'a, 'js> {
    request: &'a ExecuteRequest,
    transpiled: &'a Transpiled,
    promise: &'a Promise<'js>,
}

/// Compiles the program into the async function that runs it. No guest code runs, so what
/// fails here is the compiler's finding.
fn compile<'js>(
    ctx: &Ctx<'js>,
    request: &ExecuteRequest,
    transpiled: &Transpiled,
    shared: &Rc<Shared>,
    explain: &Function<'js>,
) -> Result<Function<'js>, EngineError> {
    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = true;
    options.filename = Some(SCRIPT_NAME.to_owned());
    ctx.eval_with_options::<Function<'js>, _>(transpiled.script.as_bytes(), options)
        .catch(ctx)
        .map_err(|caught| compile_failure(ctx, shared, request, transpiled, explain, caught))
}

/// The value of a program whose promise resolved, with the warnings its ending calls for.
fn resolved<'js>(
    ctx: &Ctx<'js>,
    shared: &Rc<Shared>,
    run: &Program<'_, 'js>,
    prelude: &PreludeFunctions<'js>,
    emit: &mut dyn FnMut(EngineEvent),
) -> Result<Value, EngineError> {
    let Program {
        request,
        transpiled,
        promise,
    } = *run;
    let value: rquickjs::Value<'js> = promise
        .result::<rquickjs::Value<'js>>()
        .and_then(Result::ok)
        .unwrap_or_else(|| rquickjs::Value::new_undefined(ctx.clone()));
    if value.is_undefined()
        && shared.log_bytes.get() == 0
        && let Some(ending) = &transpiled.ending
    {
        warn(shared, program::no_value_warning(request.language, ending));
    }
    let running = shared.outstanding.borrow().len();
    if running > 0 {
        warn(
            shared,
            program::calls_still_running_warning(request.language, running),
        );
    }
    warn_of_unhandled_rejections(ctx, shared, transpiled, &prelude.explain, promise);
    shared.release_progress();
    flush(shared, emit);
    convert_result(
        ctx,
        shared,
        transpiled,
        &prelude.to_json,
        &prelude.explain,
        value,
    )
}

/// The error of a program whose promise was rejected.
fn rejected<'js>(
    ctx: &Ctx<'js>,
    shared: &Rc<Shared>,
    run: &Program<'_, 'js>,
    prelude: &PreludeFunctions<'js>,
    emit: &mut dyn FnMut(EngineEvent),
) -> EngineError {
    let Program {
        request,
        transpiled,
        promise,
    } = *run;
    let reason = match promise.result::<rquickjs::Value<'js>>() {
        Some(Err(rquickjs::Error::Exception)) => ctx.catch(),
        Some(Ok(value)) => value,
        _ => rquickjs::Value::new_undefined(ctx.clone()),
    };
    let error = failure(
        ctx,
        shared,
        request,
        transpiled,
        &prelude.explain,
        CaughtError::Value(reason),
    );
    warn_of_unhandled_rejections(ctx, shared, transpiled, &prelude.explain, promise);
    shared.release_progress();
    flush(shared, emit);
    error
}

/// Waits for what the pending program waits on: the host's replies, delivered, and the timers
/// due, fired; `Err` when it can never settle, its deadline passed or it was cancelled.
fn wait_for_host<'js>(
    ctx: &Ctx<'js>,
    shared: &Rc<Shared>,
    prelude: &PreludeFunctions<'js>,
    emit: &mut dyn FnMut(EngineEvent),
    replies: &dyn Replies,
    cancel: &CancelFlag,
) -> Result<(), EngineError> {
    let settle = &prelude.settle;
    let local = std::mem::take(&mut *shared.local_replies.borrow_mut());
    if !local.is_empty() {
        for (id, message) in local {
            let reply = HostReply::Result {
                id,
                outcome: Err(message),
            };
            deliver(ctx, shared, settle, reply, cancel);
        }
        return Ok(());
    }
    let next_timer = shared.timers.borrow().next_due();
    if shared.outstanding.borrow().is_empty() && next_timer.is_none() {
        return Err(EngineError::NeverSettles);
    }
    let now = Instant::now();
    if now >= shared.deadline() {
        return Err(EngineError::Timeout {
            limit: shared.limits().timeout,
        });
    }
    let wake = next_timer.map_or(shared.deadline(), |at| at.min(shared.deadline()));
    // The client hears of the latest progress before the program waits.
    shared.release_progress();
    flush(shared, emit);
    match replies.recv_timeout(wake.saturating_duration_since(now)) {
        Ok(reply) => {
            deliver(ctx, shared, settle, reply, cancel);
            // Take every answer already waiting before running jobs again.
            while let Some(reply) = replies.try_recv() {
                deliver(ctx, shared, settle, reply, cancel);
            }
        }
        Err(RecvTimeoutError::Timeout) => {}
        Err(RecvTimeoutError::Disconnected) => {
            // The host is gone: nothing can answer the outstanding calls.
            return Err(EngineError::Cancelled);
        }
    }
    if cancel.is_cancelled() {
        return Err(EngineError::Cancelled);
    }
    let due = shared.timers.borrow_mut().take_due(Instant::now());
    for id in due {
        // A throwing callback is the guest's business: like a browser, it is not fatal to the
        // program unless something awaits it. An interrupt is seen by `limit_error` next.
        let _ = prelude.fire.call::<_, ()>((id as f64,)).catch(ctx);
        if shared.stop.get().is_some() || shared.budget.limit_hit() {
            break;
        }
    }
    Ok(())
}

/// A module's bytecode, compiled once per process.
type Bytecode = OnceLock<Result<Vec<u8>, String>>;
static PRELUDE_BYTECODE: Bytecode = OnceLock::new();
static WEB_BYTECODE: Bytecode = OnceLock::new();

/// The default export of the module `name` (the prelude's or web.js's factory function), from
/// bytecode compiled once per process into `bytecode`.
fn load_module<'js>(
    ctx: &Ctx<'js>,
    bytecode: &'static Bytecode,
    name: &'static str,
    source: &'static str,
) -> Result<Function<'js>, String> {
    let bytecode = bytecode
        .get_or_init(|| {
            // Compiled in a runtime of its own: the bytecode carries no state of any runtime.
            let runtime = Runtime::new().map_err(|error| error.to_string())?;
            let context = Context::full(&runtime).map_err(|error| error.to_string())?;
            context.with(|ctx| {
                // Without line tables and source: each runtime reads the bytecode, and nothing
                // reads positions in the prelude.
                Module::declare(ctx.clone(), name, source)
                    .catch(&ctx)
                    .map_err(|error| error.to_string())?
                    .write(WriteOptions {
                        strip_source: true,
                        strip_debug: true,
                        ..WriteOptions::default()
                    })
                    .map_err(|error| error.to_string())
            })
        })
        .as_ref()
        .map_err(Clone::clone)?;
    load_bytecode(ctx, bytecode)
        .catch(ctx)
        .map_err(|error| error.to_string())
}

#[expect(unsafe_code, reason = "QuickJS trusts the bytecode it loads")]
fn load_bytecode<'js>(ctx: &Ctx<'js>, bytecode: &[u8]) -> rquickjs::Result<Function<'js>> {
    // SAFETY: the bytes were written by `Module::write` in this process, by the same QuickJS,
    // from the prelude source compiled into this binary; nothing else ever reaches this call.
    let module = unsafe { Module::load(ctx.clone(), bytecode)? };
    let (module, _evaluated) = module.eval()?;
    module.get("default")
}

/// Hands the prelude the native functions; returns its host interface.
fn install_prelude<'js>(
    ctx: &Ctx<'js>,
    factory: Function<'js>,
    shared: &Rc<Shared>,
) -> Result<Object<'js>, EngineError> {
    let native = Object::new(ctx.clone()).map_err(internal)?;
    let functions = tool_functions(ctx, shared)?
        .into_iter()
        .chain(session_functions(ctx, shared)?)
        .chain(runtime_functions(ctx, shared)?);
    for (name, function) in functions {
        native.set(name, function).map_err(internal)?;
    }
    factory
        .call((native,))
        .catch(ctx)
        .map_err(|error| internal_message(format!("the prelude did not start: {error}")))
}

/// Puts web.js's globals on the global object and its guards on the built-ins. Its one native
/// function reads random bytes from the operating system (`getrandom`, which confinement
/// allows); the text `promiseMisread` ends what a string's or an array's method read on a
/// Promise throws, so that the report can name the value (see [`report::promise_misread`]).
fn install_web<'js>(ctx: &Ctx<'js>) -> Result<(), EngineError> {
    let factory = load_module(ctx, &WEB_BYTECODE, WEB_NAME, WEB)
        .map_err(|error| internal_message(format!("web.js did not load: {error}")))?;
    let native = Object::new(ctx.clone()).map_err(internal)?;
    let random_bytes = Function::new(ctx.clone(), random_bytes).map_err(internal)?;
    native.set("randomBytes", random_bytes).map_err(internal)?;
    native
        .set("promiseMisread", report::PROMISE_MISREAD)
        .map_err(internal)?;
    factory
        .call::<_, ()>((native,))
        .catch(ctx)
        .map_err(|error| internal_message(format!("web.js did not start: {error}")))
}

/// `randomBytes(length)`: `length` bytes from the operating system's random source, for
/// `crypto.getRandomValues` and `crypto.randomUUID`.
fn random_bytes<'js>(ctx: Ctx<'js>, length: f64) -> rquickjs::Result<TypedArray<'js, u8>> {
    if !(0.0..=MAX_RANDOM_BYTES as f64).contains(&length) {
        return Err(rquickjs::Exception::throw_range(
            &ctx,
            &format!("at most {MAX_RANDOM_BYTES} random bytes at once"),
        ));
    }
    let mut bytes = vec![0; length as usize];
    if let Err(error) = getrandom::fill(&mut bytes) {
        return Err(rquickjs::Exception::throw_internal(
            &ctx,
            &format!("the operating system gave no random bytes: {error}"),
        ));
    }
    TypedArray::new(ctx, bytes)
}

/// The native functions that ask the host about tools: call, search, describe, and a
/// server's resources and prompts.
fn tool_functions<'js>(
    ctx: &Ctx<'js>,
    shared: &Rc<Shared>,
) -> Result<[(&'static str, Function<'js>); 4], EngineError> {
    let call_tool = {
        let shared = shared.clone();
        Function::new(
            ctx.clone(),
            move |GuestText(name), GuestText(args), raw: bool| -> f64 {
                let request = guest_json(args, "the arguments")
                    .map(|args| HostRequest::Tool { name, args, raw })
                    .map_err(|error| format!("invalid arguments to a tool call: {error}"));
                send(&shared, request)
            },
        )
        .map_err(internal)?
    };
    let search = {
        let shared = shared.clone();
        Function::new(
            ctx.clone(),
            move |GuestText(query), limit: Option<f64>| -> f64 {
                send(&shared, search_request(query, limit))
            },
        )
        .map_err(internal)?
    };
    let describe = {
        let shared = shared.clone();
        Function::new(ctx.clone(), move |names: Vec<GuestText>| -> f64 {
            let names = names.into_iter().map(|GuestText(name)| name).collect();
            send(&shared, Ok(HostRequest::Describe { names }))
        })
        .map_err(internal)?
    };
    let ask_server = {
        let shared = shared.clone();
        Function::new(
            ctx.clone(),
            move |GuestText(server),
                  GuestText(method),
                  subject: Option<GuestText>,
                  args: Option<GuestText>|
                  -> f64 {
                let args = match args {
                    Some(GuestText(args)) => guest_json(args, "the arguments")
                        .map_err(|error| format!("invalid arguments to {method}: {error}")),
                    None => Ok(Value::Null),
                };
                let request = args.and_then(|args| {
                    crate::ServerAsk::new(&method, subject.map(|GuestText(text)| text), args)
                        .map(|ask| HostRequest::Server { server, ask })
                });
                send(&shared, request)
            },
        )
        .map_err(internal)?
    };
    Ok([
        ("callTool", call_tool),
        ("search", search),
        ("describeNames", describe),
        ("askServer", ask_server),
    ])
}

/// The native functions that ask the host for the session: its store, blocks of the answer,
/// progress, and the client's LLM.
fn session_functions<'js>(
    ctx: &Ctx<'js>,
    shared: &Rc<Shared>,
) -> Result<[(&'static str, Function<'js>); 4], EngineError> {
    let ask_session = {
        let shared = shared.clone();
        Function::new(
            ctx.clone(),
            move |GuestText(function), GuestText(args)| -> f64 {
                let request = match guest_json(args, "the arguments") {
                    Ok(Value::Array(arguments)) => {
                        crate::SessionAsk::new(&function, arguments).map(HostRequest::Session)
                    }
                    Ok(_) => Err(format!("internal error: {function} got no argument list")),
                    Err(error) => Err(format!("invalid arguments to {function}: {error}")),
                };
                send(&shared, request)
            },
        )
        .map_err(internal)?
    };
    let emit_block = {
        let shared = shared.clone();
        Function::new(ctx.clone(), move |GuestText(block)| -> f64 {
            let request = guest_json(block, "the block")
                .map(|block| HostRequest::Emit { block })
                .map_err(|error| format!("emit(block): {error}"));
            send(&shared, request)
        })
        .map_err(internal)?
    };
    let progress = {
        let shared = shared.clone();
        Function::new(
            ctx.clone(),
            move |done: f64, total: Option<f64>, message: Option<GuestText>| -> Option<String> {
                match crate::Progress::new(done, total, message.map(|GuestText(text)| text)) {
                    Ok(progress) => {
                        if let Some(event) = shared.progress.borrow_mut().offer(progress) {
                            shared.events.borrow_mut().push(event);
                        }
                        None
                    }
                    Err(problem) => Some(format!("progress(done, total?, message?): {problem}")),
                }
            },
        )
        .map_err(internal)?
    };
    let ask_llm = {
        let shared = shared.clone();
        Function::new(
            ctx.clone(),
            move |GuestText(function), GuestText(args)| -> f64 {
                let request = match guest_json(args, "the arguments") {
                    Ok(Value::Array(arguments)) => {
                        crate::LlmAsk::new(&function, arguments).map(HostRequest::Llm)
                    }
                    Ok(_) => Err(format!("internal error: {function} got no argument list")),
                    Err(error) => Err(format!("invalid arguments to {function}: {error}")),
                };
                send(&shared, request)
            },
        )
        .map_err(internal)?
    };
    Ok([
        ("askSession", ask_session),
        ("emitBlock", emit_block),
        ("progress", progress),
        ("askLlm", ask_llm),
    ])
}

/// The native functions the prelude's runtime uses: the console, timers, the names of the
/// tools, and what kind of object a value is.
fn runtime_functions<'js>(
    ctx: &Ctx<'js>,
    shared: &Rc<Shared>,
) -> Result<[(&'static str, Function<'js>); 5], EngineError> {
    let log = {
        let shared = shared.clone();
        Function::new(ctx.clone(), move |stream: i32, GuestText(text)| {
            log(&shared, stream, text);
        })
        .map_err(internal)?
    };
    let start_timer = {
        let shared = shared.clone();
        Function::new(ctx.clone(), move |delay: f64| -> f64 {
            start_timer(&shared, delay)
        })
        .map_err(internal)?
    };
    let stop_timer = {
        let shared = shared.clone();
        Function::new(ctx.clone(), move |id: f64| {
            let mut timers = shared.timers.borrow_mut();
            if let Some(at) = timers.by_id.remove(&(id as u64)) {
                timers.due.remove(&(at, id as u64));
            }
        })
        .map_err(internal)?
    };
    let list_names = {
        let shared = shared.clone();
        Function::new(ctx.clone(), move |server: Option<String>| {
            list_names(&shared.manifest.borrow(), server.as_deref())
        })
        .map_err(internal)?
    };
    let kind_of = Function::new(ctx.clone(), |value: rquickjs::Value<'_>| kind_of(&value))
        .map_err(internal)?;
    Ok([
        ("log", log),
        ("startTimer", start_timer),
        ("stopTimer", stop_timer),
        ("listNames", list_names),
        ("kindOf", kind_of),
    ])
}

/// `kindOf(value)`: which of the built-in objects JSON cannot carry as they are `value` is, by
/// QuickJS's own class of it (which no guest code can fake or observe): `map`, `set`, `typed`
/// (a typed array), `error`, `promise`, `weak`, `buffer`, `regexp`, or `""`.
#[expect(
    unsafe_code,
    reason = "asks QuickJS for the class of a value; no guest code runs"
)]
fn kind_of(value: &rquickjs::Value<'_>) -> &'static str {
    if !value.is_object() {
        return "";
    }
    let raw = value.as_raw();
    // SAFETY: `raw` is a live object value for the duration of these calls, which only read its
    // class.
    unsafe {
        use rquickjs::qjs;
        if qjs::JS_IsMap(raw) {
            "map"
        } else if qjs::JS_IsSet(raw) {
            "set"
        } else if qjs::JS_GetTypedArrayType(raw) >= 0 {
            "typed"
        } else if qjs::JS_IsError(raw) {
            "error"
        } else if qjs::JS_IsPromise(raw) {
            "promise"
        } else if qjs::JS_IsWeakMap(raw) || qjs::JS_IsWeakSet(raw) || qjs::JS_IsWeakRef(raw) {
            "weak"
        } else if qjs::JS_IsArrayBuffer(raw) || qjs::JS_IsDataView(raw) {
            "buffer"
        } else if qjs::JS_IsRegExp(raw) {
            "regexp"
        } else {
            ""
        }
    }
}

/// `listNames(server)`: the servers (`server` null), or the tools of a server that is ready;
/// `None` (null) for a server that is starting, or that does not exist.
fn list_names(manifest: &Manifest, server: Option<&str>) -> Option<Vec<String>> {
    let Some(server) = server else {
        return Some(
            manifest
                .namespaces
                .iter()
                .map(|namespace| namespace.name.clone())
                .collect(),
        );
    };
    manifest
        .namespaces
        .iter()
        .find(|namespace| namespace.name == server)?
        .tools
        .clone()
}

/// Queues a host request and returns its id; the prelude keeps the promise. A request the engine
/// refuses itself is answered with its error like any host reply.
fn send(shared: &Shared, request: Result<HostRequest, String>) -> f64 {
    let id = shared.next_id.get();
    shared.next_id.set(id + 1);
    let request = match request {
        Ok(request) => request,
        Err(message) => {
            // Answered here, without the host; the loop delivers it like any host reply.
            shared.outstanding.borrow_mut().insert(id);
            shared.local_replies.borrow_mut().push((id, message));
            return id as f64;
        }
    };
    if request.reaches_server() {
        let count = shared.tool_calls.get() + 1;
        shared.tool_calls.set(count);
        if count > shared.limits().max_tool_calls {
            shared.stop(Stop::ToolCallLimit);
            return id as f64;
        }
    } else {
        let count = shared.discovery_calls.get() + 1;
        shared.discovery_calls.set(count);
        if count > MAX_DISCOVERY_CALLS {
            shared.stop(Stop::DiscoveryLimit);
            return id as f64;
        }
    }
    shared.outstanding.borrow_mut().insert(id);
    shared
        .events
        .borrow_mut()
        .push(EngineEvent::Call(HostCall { id, request }));
    id as f64
}

/// `searchTools(query, limit?)`, with the limit checked.
fn search_request(query: String, limit: Option<f64>) -> Result<HostRequest, String> {
    let limit = match limit {
        None => None,
        Some(limit) if limit.is_finite() && limit >= 1.0 => Some(limit.min(1000.0) as u32),
        Some(limit) => {
            return Err(format!(
                "searchTools: limit must be a positive number, got {limit}"
            ));
        }
    };
    Ok(HostRequest::Search { query, limit })
}

/// `log(stream, text)`: queues a console line while the output stays within its bound.
fn log(shared: &Shared, stream: i32, text: String) {
    if shared.stop.get().is_some() {
        return;
    }
    let total = shared.log_bytes.get() + text.len() + 1;
    if total > shared.limits().max_log_bytes {
        shared.stop(Stop::LogLimit);
        return;
    }
    shared.log_bytes.set(total);
    let stream = match stream {
        1 => LogStream::Info,
        2 => LogStream::Warn,
        3 => LogStream::Error,
        4 => LogStream::Debug,
        _ => LogStream::Log,
    };
    shared
        .events
        .borrow_mut()
        .push(EngineEvent::Log { stream, text });
}

/// `startTimer(delay)`: schedules a timer and returns its id. One past [`MAX_TIMERS`] pending
/// stops the guest (its id, 0, names no timer).
fn start_timer(shared: &Shared, delay: f64) -> f64 {
    let mut timers = shared.timers.borrow_mut();
    if timers.by_id.len() >= MAX_TIMERS {
        shared.stop(Stop::TimerLimit);
        return 0.0;
    }
    timers.next_id += 1;
    let id = timers.next_id;
    let delay = if delay.is_finite() && delay > 0.0 {
        // Beyond the deadline every delay is the same; keep the arithmetic bounded.
        Duration::from_secs_f64((delay / 1000.0).min(shared.limits().timeout.as_secs_f64() + 1.0))
    } else {
        Duration::ZERO
    };
    let at = Instant::now() + delay;
    timers.due.insert((at, id));
    timers.by_id.insert(id, at);
    id as f64
}

/// Hands queued events to the host, in the order the guest produced them.
fn flush(shared: &Shared, emit: &mut dyn FnMut(EngineEvent)) {
    let events = std::mem::take(&mut *shared.events.borrow_mut());
    for event in events {
        emit(event);
    }
}

/// Settles the guest's promise for one host reply.
fn deliver<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    settle: &Function<'js>,
    reply: HostReply,
    cancel: &CancelFlag,
) {
    match reply {
        HostReply::Result { id, outcome } => {
            if !shared.outstanding.borrow_mut().remove(&id) {
                return;
            }
            // A string (most tools answer text) is handed over as it is: writing it as JSON for
            // the guest to parse back would cost two passes over it, tens of milliseconds for a
            // large one.
            let (ok, text, plain) = match outcome {
                Ok(serde_json::Value::String(text)) => (true, text, true),
                Ok(value) => (
                    true,
                    serde_json::to_string(&value).unwrap_or_else(|_| "null".to_owned()),
                    false,
                ),
                Err(message) => (false, message, false),
            };
            let _ = settle
                .call::<_, ()>((id as f64, ok, text, plain))
                .catch(ctx);
        }
        HostReply::Cancel => cancel.cancel(),
    }
}

/// QuickJS's report that `promise` was rejected with nothing to handle it (`is_handled` false),
/// or got a handler after all.
fn track_rejection<'js>(
    shared: &Shared,
    ctx: &Ctx<'js>,
    promise: rquickjs::Value<'js>,
    reason: rquickjs::Value<'js>,
    is_handled: bool,
) {
    let Some(address) = object_address(&promise) else {
        return;
    };
    let mut rejections = shared.rejections.borrow_mut();
    if is_handled {
        rejections.retain(|rejection| rejection.promise != address);
    } else if rejections.len() < MAX_TRACKED_REJECTIONS {
        rejections.push(Rejection {
            promise: address,
            _kept: Persistent::save(ctx, promise),
            reason: Persistent::save(ctx, reason),
        });
    }
}

/// Queues a warning for the host.
fn warn(shared: &Shared, text: String) {
    shared
        .events
        .borrow_mut()
        .push(EngineEvent::Warning { text });
}

/// A warning for each promise that was rejected and that nothing awaited or caught by the end
/// (the program's own promise aside: its rejection is the execution's failure), naming the
/// reason and where it was made.
fn warn_of_unhandled_rejections<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    transpiled: &Transpiled,
    explain: &Function<'js>,
    program: &Promise<'js>,
) {
    let program = object_address(program.as_value());
    let rejections = std::mem::take(&mut *shared.rejections.borrow_mut());
    let unhandled: Vec<Rejection> = rejections
        .into_iter()
        .filter(|rejection| Some(rejection.promise) != program)
        .collect();
    for rejection in unhandled.iter().take(MAX_REJECTION_WARNINGS) {
        let Ok(reason) = rejection.reason.clone().restore(ctx) else {
            continue;
        };
        let explained = explain_caught(ctx, shared, explain, CaughtError::Value(reason));
        if limit_error(shared).is_some() {
            return;
        }
        let what = if explained.name.is_empty() {
            explained.message
        } else {
            format!("{}: {}", explained.name, explained.message)
        };
        let at = report::guest_stack(&explained.stack, transpiled)
            .frames
            .first()
            .map(|frame| format!(" (made at line {}, column {})", frame.line, frame.column))
            .unwrap_or_default();
        warn(
            shared,
            format!(
                "a promise was rejected and nothing awaited it{at}: {what}. Await it (or \
                 `.catch(...)` it when its failure does not matter)."
            ),
        );
    }
    if unhandled.len() > MAX_REJECTION_WARNINGS {
        warn(
            shared,
            format!(
                "{} more promises were rejected and nothing awaited them.",
                unhandled.len() - MAX_REJECTION_WARNINGS
            ),
        );
    }
}

/// The error for a limit the engine observed, if any.
fn limit_error(shared: &Shared) -> Option<EngineError> {
    if shared.budget.limit_hit() {
        return Some(EngineError::MemoryLimit {
            limit: shared.limits().memory_bytes,
        });
    }
    if shared.stop.get().is_none() && Instant::now() >= shared.deadline() {
        // The allocator may have halted the guest at the deadline before any interrupt check.
        shared.stop(Stop::Timeout);
    }
    Some(match shared.stop.get()? {
        Stop::Timeout => EngineError::Timeout {
            limit: shared.limits().timeout,
        },
        Stop::Cancelled => EngineError::Cancelled,
        Stop::LogLimit => EngineError::LogLimit {
            limit: shared.limits().max_log_bytes,
        },
        Stop::ToolCallLimit => EngineError::ToolCallLimit {
            limit: shared.limits().max_tool_calls,
        },
        Stop::TimerLimit => EngineError::TimerLimit { limit: MAX_TIMERS },
        Stop::DiscoveryLimit => EngineError::Guest {
            name: "Error".to_owned(),
            message: format!(
                "more than {MAX_DISCOVERY_CALLS} searchTools/describeTools calls in one execution"
            ),
            line: None,
            column: None,
            stack: None,
        },
    })
}

/// The program's value as JSON, within the result bound.
fn convert_result<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    transpiled: &Transpiled,
    to_json: &Function<'js>,
    explain: &Function<'js>,
    value: rquickjs::Value<'js>,
) -> Result<Value, EngineError> {
    let converted = to_json
        .call::<_, rquickjs::Value<'js>>((value, "result"))
        .catch(ctx);
    let converted = match converted {
        Ok(converted) if converted.is_object() => {
            // The prelude's `{ problem }`, an object only the host sees: reading it runs no
            // guest code.
            let problem = converted
                .as_object()
                .and_then(|problem| problem.get::<_, GuestText>("problem").ok())
                .map_or_else(String::new, |GuestText(problem)| problem);
            return Err(
                limit_error(shared).unwrap_or(EngineError::Unserializable { message: problem })
            );
        }
        Ok(text) => GuestText::from_js(ctx, text).catch(ctx),
        Err(caught) => Err(caught),
    };
    let text = match converted {
        Ok(GuestText(text)) => text,
        Err(caught) => {
            if let Some(error) = limit_error(shared) {
                return Err(error);
            }
            let explained = explain_caught(ctx, shared, explain, caught);
            // Explaining runs the guest's getters: a limit met meanwhile is what ended it.
            if let Some(error) = limit_error(shared) {
                return Err(error);
            }
            if explained.overflow {
                return Err(EngineError::StackOverflow);
            }
            let position = position_of(&explained.stack, transpiled);
            let message = if explained.name.is_empty() {
                explained.message
            } else {
                format!("{}: {}", explained.name, explained.message)
            };
            let message = match position {
                Some((line, column)) => format!("{message} (at line {line}, column {column})"),
                None => message,
            };
            return Err(EngineError::Unserializable { message });
        }
    };
    if let Some(error) = limit_error(shared) {
        return Err(error);
    }
    if text.len() > shared.limits().max_result_bytes {
        return Err(EngineError::ResultTooLarge {
            size: text.len(),
            limit: shared.limits().max_result_bytes,
        });
    }
    guest_json(text, "the result").map_err(|message| EngineError::Unserializable { message })
}

/// Maps a failure to compile the script. No guest code has run in this runtime yet, so what was
/// thrown is QuickJS's own finding (or the engine's stop).
fn compile_failure<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    request: &ExecuteRequest,
    transpiled: &Transpiled,
    explain: &Function<'js>,
    caught: CaughtError<'js>,
) -> EngineError {
    let explained = match explain_unless_stopped(ctx, shared, explain, caught) {
        Ok(explained) => explained,
        Err(error) => return error,
    };
    match explained.name.as_str() {
        "SyntaxError" => compile_error(
            &request.code,
            transpiled,
            position_in_script(&explained.stack),
            &explained.message,
        ),
        "RangeError" if explained.message == STACK_OVERFLOW_MESSAGE => {
            // The compiler recursed once per level of nesting, past the stack limit.
            compile_error(
                &request.code,
                transpiled,
                None,
                &format!(
                    "the program nests too deeply to compile within the {} KiB stack \
                     (--stack-kb). Split it up: give inner parts names, or build deeply nested \
                     data in a loop",
                    shared.limits().stack_bytes / 1024
                ),
            )
        }
        _ => internal_message(format!(
            "QuickJS could not compile the program: {}: {}",
            explained.name, explained.message
        )),
    }
}

/// Maps an uncaught throw (or the engine's own stop) to the error the host reports.
fn failure<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    request: &ExecuteRequest,
    transpiled: &Transpiled,
    explain: &Function<'js>,
    caught: CaughtError<'js>,
) -> EngineError {
    let explained = match explain_unless_stopped(ctx, shared, explain, caught) {
        Ok(explained) => explained,
        Err(error) => return error,
    };
    if explained.overflow {
        return EngineError::StackOverflow;
    }
    guest_error(request, transpiled, explained)
}

/// An error the guest threw (or QuickJS raised in its code), told in the code as written: what
/// failed named where QuickJS's message does not, and the calls inside the program that led
/// there, the innermost with its line and a caret.
fn guest_error(
    request: &ExecuteRequest,
    transpiled: &Transpiled,
    explained: Explained,
) -> EngineError {
    let Explained {
        name,
        message,
        stack,
        ..
    } = explained;
    let stack = report::guest_stack(&stack, transpiled);
    let innermost = stack.frames.first();
    let message = match innermost {
        Some(frame) if stack.raised_in_guest_code && name == "TypeError" => {
            report::name_the_operation(&request.code, request.language, &message, frame)
                .unwrap_or(message)
        }
        Some(frame) if name == "TypeError" && message.ends_with(report::PROMISE_MISREAD) => {
            report::promise_misread(&request.code, request.language, &message, frame)
                .unwrap_or(message)
        }
        _ => with_way_out(request, &name, message),
    };
    let head = if name.is_empty() || message.starts_with(&name) {
        message.clone()
    } else {
        format!("{name}: {message}")
    };
    let traceback =
        (!stack.frames.is_empty()).then(|| report::traceback(&request.code, &head, &stack.frames));
    EngineError::Guest {
        message,
        name,
        line: innermost.map(|frame| frame.line),
        column: innermost.map(|frame| frame.column),
        stack: traceback,
    }
}

/// `message` with the way out added, when it is about a name or a module the sandbox does not
/// have (`fetch is not defined`, `could not load module 'fs'`).
fn with_way_out(request: &ExecuteRequest, name: &str, message: String) -> String {
    let module = message
        .strip_prefix("could not load module '")
        .and_then(|rest| rest.strip_suffix('\''));
    let hint = match (name, module) {
        (_, Some(module)) => Some(hints::missing_module(
            module,
            request.language,
            &request.manifest,
        )),
        ("ReferenceError", None) => message
            .strip_suffix(" is not defined")
            .and_then(|missing| hints::missing_name(missing, request.language, &request.manifest)),
        _ => None,
    };
    match hint {
        Some(hint) => format!("{message} ({hint})"),
        None => message,
    }
}

/// Reads a thrown value through the prelude's `explain`. Only `overflow` is the host's own
/// finding; the rest is what the guest's values say.
/// Describes what was thrown, unless a limit or a stop ended the run: before describing, or
/// while describing, since that runs the guest's getters (a getter that never returns meets the
/// deadline).
fn explain_unless_stopped<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    explain: &Function<'js>,
    caught: CaughtError<'js>,
) -> Result<Explained, EngineError> {
    if let Some(error) = limit_error(shared) {
        return Err(error);
    }
    let explained = explain_caught(ctx, shared, explain, caught);
    match limit_error(shared) {
        Some(error) => Err(error),
        None => Ok(explained),
    }
}

fn explain_caught<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    explain: &Function<'js>,
    caught: CaughtError<'js>,
) -> Explained {
    let value = match caught {
        CaughtError::Value(value) => value,
        CaughtError::Exception(exception) => exception.into_value(),
        CaughtError::Error(error) => {
            return Explained {
                name: "InternalError".to_owned(),
                message: error.to_string(),
                stack: String::new(),
                overflow: false,
            };
        }
    };
    let Ok(explained) = explain.call::<_, Object<'js>>((value,)).catch(ctx) else {
        return Explained::unreadable("Uncaught exception (it could not be described)");
    };
    // `explained` is an object the prelude made without a prototype and that only the host sees:
    // these reads run no guest code.
    let text = |key: &str| {
        explained
            .get::<_, GuestText>(key)
            .map(|GuestText(text)| text)
            .unwrap_or_default()
    };
    let (name, message, stack) = (text("name"), text("message"), text("stack"));
    let recorded = explained
        .get::<_, rquickjs::Value<'js>>("recorded")
        .ok()
        .and_then(|recorded| string_address(&recorded));
    let overflow = name == "RangeError"
        && message == STACK_OVERFLOW_MESSAGE
        && recorded.is_some_and(|address| shared.budget.made_at_stack_limit(address));
    Explained {
        name,
        message,
        stack,
        overflow,
    }
}

/// A string the guest hands to the host, each lone surrogate replaced by U+FFFD. rquickjs's own
/// conversion to `String` refuses a lone surrogate (a `TypeError` in the guest's `console.log`, an
/// empty message read from a thrown error): QuickJS encodes one as the three bytes of its code
/// point, which are not UTF-8.
struct GuestText(String);

impl<'js> FromJs<'js> for GuestText {
    fn from_js(_ctx: &Ctx<'js>, value: rquickjs::Value<'js>) -> rquickjs::Result<Self> {
        // Strings only: anything else is refused as rquickjs refuses it, without running the
        // guest's `toString`.
        read_string(&rquickjs::String::from_value(value)?).map(Self)
    }
}

/// The text of a string value, lone surrogates included (as U+FFFD).
#[expect(
    unsafe_code,
    reason = "reads a string's bytes as QuickJS encodes them, which rquickjs refuses to"
)]
fn read_string(string: &rquickjs::String<'_>) -> rquickjs::Result<String> {
    let ctx = string.ctx().as_raw().as_ptr();
    let mut length = 0usize;
    // SAFETY: `ctx` is the live context `string` belongs to, and `string` keeps its value alive
    // for the call. The value is a string, so QuickJS converts nothing (no guest code runs).
    let bytes = unsafe { rquickjs::qjs::JS_ToCStringLen(ctx, &mut length, string.as_raw()) };
    if bytes.is_null() {
        // The heap budget refused the copy; the exception is pending in the context.
        return Err(rquickjs::Error::Exception);
    }
    // SAFETY: QuickJS returned `length` initialized bytes at `bytes`, valid until they are freed
    // below.
    let encoded = unsafe { std::slice::from_raw_parts(bytes.cast::<u8>(), length) };
    let text = well_formed_text(encoded).into_owned();
    // SAFETY: `bytes` came from `JS_ToCStringLen` on this context, is freed once, and is not
    // used after.
    unsafe { rquickjs::qjs::JS_FreeCString(ctx, bytes) };
    Ok(text)
}

/// JSON text the guest sends (from `JSON.stringify`, which escapes a lone surrogate as
/// `\udXXX`) as a value: refused when arrays and objects nest deeper than [`MAX_VALUE_DEPTH`],
/// and with each lone surrogate replaced by U+FFFD. `what` names the value in the message.
fn guest_json(text: String, what: &str) -> Result<Value, String> {
    if json_depth(text.as_bytes()) > MAX_VALUE_DEPTH {
        return Err(format!(
            "arrays and objects nest more than {MAX_VALUE_DEPTH} levels deep in {what}, which \
             cannot be sent as JSON; flatten the data"
        ));
    }
    serde_json::from_str(&well_formed_json(text)).map_err(|error| error.to_string())
}

/// How deeply arrays and objects nest in JSON text (brackets inside strings do not count).
fn json_depth(json: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &byte in json {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The address of the object `value` holds, if it is an object: what tells one promise from
/// another while it is alive.
#[expect(
    unsafe_code,
    reason = "reads the pointer inside a JSValue; it is compared, never followed"
)]
fn object_address(value: &rquickjs::Value<'_>) -> Option<usize> {
    if !value.is_object() {
        return None;
    }
    // SAFETY: `value` is a live object value, whose JSValue holds a pointer to its JSObject; the
    // pointer is only turned into a number to compare with others.
    let pointer = unsafe { rquickjs::qjs::JS_VALUE_GET_PTR(value.as_raw()) };
    Some(pointer as usize)
}

/// The address of the string `value` holds, if it is a string: what the allocator knows it by.
#[expect(
    unsafe_code,
    reason = "reads the pointer inside a JSValue; it is compared, never followed"
)]
fn string_address(value: &rquickjs::Value<'_>) -> Option<usize> {
    if !value.is_string() {
        return None;
    }
    // SAFETY: `value` is a live string value, whose JSValue holds a pointer to its JSString; the
    // pointer is only turned into a number to compare with addresses the allocator handed out.
    let pointer = unsafe { rquickjs::qjs::JS_VALUE_GET_PTR(value.as_raw()) };
    Some(pointer as usize)
}

/// The first position in the guest's own code named by a stack, mapped to the code as written.
fn position_of(stack: &str, transpiled: &Transpiled) -> Option<(u32, u32)> {
    script_positions(stack).find_map(|(line, column)| transpiled.original_position(line, column))
}

/// The first position in the script named by a stack, as it is in the script.
fn position_in_script(stack: &str) -> Option<(u32, u32)> {
    script_positions(stack).next()
}

/// Every `guest.js:line:column` a stack names, in order.
fn script_positions(stack: &str) -> impl Iterator<Item = (u32, u32)> + '_ {
    let marker = format!("{SCRIPT_NAME}:");
    stack.lines().filter_map(move |frame| {
        let start = frame.find(&marker)? + marker.len();
        let rest = &frame[start..];
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == ':'))
            .unwrap_or(rest.len());
        let mut numbers = rest[..end].split(':');
        let line: u32 = numbers.next()?.parse().ok()?;
        let column: u32 = numbers.next().and_then(|c| c.parse().ok()).unwrap_or(1);
        Some((line, column))
    })
}

fn internal(error: rquickjs::Error) -> EngineError {
    internal_message(error.to_string())
}

fn internal_message(message: String) -> EngineError {
    EngineError::Internal { message }
}
