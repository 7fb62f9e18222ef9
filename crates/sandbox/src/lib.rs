//! Guest-code engines behind a message API. No I/O of its own: everything outside the guest is a
//! message to the host.
//!
//! [`execute`] runs one program on the calling thread (guest code blocks the thread it runs on,
//! so the host gives each execution a thread of its own). The engine reports [`EngineEvent`]s —
//! started, host calls, console lines — through a callback and receives [`HostReply`]s through
//! [`Replies`]. Several host calls may be outstanding at once. Limits are the engine's own
//! observations: a deadline, a heap limit, a stack limit, output bounds and a cancel flag.

#![cfg_attr(
    test,
    allow(
        clippy::too_many_lines,
        reason = "a test reads top to bottom as one scenario"
    )
)]

mod alloc;
mod hints;
mod javascript;
mod pool;
mod program;
mod python;
mod report;
mod transpile;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

pub use alloc::stack_address;
pub use javascript::{PreparedJavaScript, SpentJavaScript};
pub use pool::{EnginePool, Job, ThreadExecution};

/// The largest program accepted, in bytes. Parsing recurses once per level of nesting, so the
/// size bounds how deep a hostile program can make the parser go.
pub const MAX_CODE_BYTES: usize = 256 * 1024;

/// How deeply arrays and objects (lists and dicts) may nest in a value the guest sends: tool
/// arguments and the result. Deeper values are refused with a message naming this bound, in both
/// languages, before a parser or converter on either side (serde_json stops at 128, and so may a
/// client reading the answer the value is wrapped in) has to recurse that far.
pub const MAX_VALUE_DEPTH: usize = 100;

/// Stack the thread calling [`execute`] needs beyond the guest's own stack limit: enough for the
/// parser and transformer on the deepest program of [`MAX_CODE_BYTES`]. It is address space, not
/// memory: pages are only touched by a program that nests that deep.
pub const THREAD_STACK_HEADROOM: usize = 512 * 1024 * 1024;

/// Stack an [`EnginePool`] thread has beyond the guest's own stack limit. Its programs are
/// compiled on a thread of their own (which has [`THREAD_STACK_HEADROOM`]), so this covers only
/// what runs beside the guest: value conversions (at most [`MAX_VALUE_DEPTH`] levels) and Python's
/// recursion through nested values (at most 10,000 levels of a few KiB each).
pub const ENGINE_THREAD_HEADROOM: usize = 64 * 1024 * 1024;

/// Hands the memory the C allocator holds free back to the system (glibc's `malloc_trim`). After
/// a large build frees most of what it allocated (a catalog of thousands of tools), the process's
/// resident memory otherwise stays at its peak. Elsewhere it does nothing.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[expect(
        unsafe_code,
        reason = "malloc_trim takes no pointers; it only returns pages the allocator holds free"
    )]
    // SAFETY: `malloc_trim` reads and changes only glibc's own free lists, under its locks; no
    // memory in use is touched.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Keeps glibc's C allocator to at most `arenas` arenas (it makes up to 8 per core as threads
/// allocate, each reserving 64 MiB of address space). Fewer arenas mean a thread that frees a
/// large build's garbage leaves holes another thread's later allocations reuse, instead of
/// holes stranded in an arena of its own. Only ever lowers the bound: a later call with a larger
/// number keeps the smaller one. Call it before threads start: a thread keeps the arena it first
/// used. Elsewhere it does nothing.
pub fn limit_malloc_arenas(arenas: i32) {
    use std::sync::atomic::{AtomicI32, Ordering};
    /// The bound set so far; 0 while none is.
    static SET: AtomicI32 = AtomicI32::new(0);
    let arenas = arenas.max(1);
    let lowered = SET.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |set| {
        (set == 0 || arenas < set).then_some(arenas)
    });
    if lowered.is_err() {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[expect(unsafe_code, reason = "mallopt takes no pointers")]
    // SAFETY: mallopt changes only glibc's own tuning, under its lock.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, arenas);
    }
}

/// Runs one program to its outcome on the calling thread (guest code blocks the thread it runs
/// on). `emit` receives events in order; `replies` carries the host's answers.
pub fn execute(
    request: ExecuteRequest,
    emit: &mut dyn FnMut(EngineEvent),
    replies: &dyn Replies,
    cancel: &CancelFlag,
) -> Outcome {
    match request.language {
        Language::JavaScript | Language::TypeScript => {
            javascript::execute(request, emit, replies, cancel)
        }
        Language::Python => python::execute(request, emit, replies, cancel),
    }
}

/// Runs the TypeScript front end once on `code` and drops what it made, so that its code and
/// data are faulted in before a program needs them (a worker process warming up).
pub fn warm_up_compiler(code: &str) {
    let _ = transpile::transpile(code, Language::TypeScript);
}

/// Where an engine's answers from the host come from: a channel in the gateway's process, the
/// worker's stdin in a worker process.
///
/// An engine asks for answers only once it has nothing else to do, so a source may hold the
/// engine's events back until then and send them together (a worker writes them in one go).
pub trait Replies {
    /// The next answer, waiting at most `timeout` for one.
    fn recv_timeout(&self, timeout: Duration) -> Result<HostReply, RecvTimeoutError>;
    /// An answer that is there already, without waiting.
    fn try_recv(&self) -> Option<HostReply>;
}

impl Replies for std::sync::mpsc::Receiver<HostReply> {
    fn recv_timeout(&self, timeout: Duration) -> Result<HostReply, RecvTimeoutError> {
        std::sync::mpsc::Receiver::recv_timeout(self, timeout)
    }

    fn try_recv(&self) -> Option<HostReply> {
        std::sync::mpsc::Receiver::try_recv(self).ok()
    }
}

/// The text a panic was raised with, as far as it is text.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// The language of a guest program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Language {
    /// JavaScript (ES2023 and later, as QuickJS-NG runs it).
    JavaScript,
    /// TypeScript: types are stripped, nothing is type-checked.
    TypeScript,
    /// Python 3, the subset the Monty interpreter runs (see `docs/python.md`).
    Python,
}

/// One execution.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ExecuteRequest {
    /// The program.
    pub code: String,
    /// Its language.
    pub language: Language,
    /// Limits for this execution.
    pub limits: EngineLimits,
    /// The names guest code can call. Shared: an engine prepared ahead of time for the same
    /// manifest has its tools set up already.
    pub manifest: Arc<Manifest>,
}

/// Limits the engine enforces itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EngineLimits {
    /// Wall-clock time from start to outcome.
    pub timeout: Duration,
    /// Heap the guest may allocate.
    pub memory_bytes: usize,
    /// Native stack the interpreter may use.
    pub stack_bytes: usize,
    /// Console output; more ends the execution.
    pub max_log_bytes: usize,
    /// The result as JSON.
    pub max_result_bytes: usize,
    /// Tool calls; the host counts them too and its count is the one that decides.
    pub max_tool_calls: u32,
}

/// What guest code can call: names only, never closures or secrets.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    /// `tools.<name>` namespaces.
    pub namespaces: Vec<Namespace>,
}

/// The manifest the next jobs will most likely have, shared by whatever prepares engines ahead
/// of them (engine threads, worker pools): set from each job and from each new catalog, read
/// when a runtime or worker is prepared.
#[derive(Debug, Default)]
pub struct ExpectedManifest(std::sync::Mutex<Option<Arc<Manifest>>>);

impl ExpectedManifest {
    /// From now on, `manifest` is the one to prepare for.
    pub fn set(&self, manifest: Arc<Manifest>) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(manifest);
    }

    /// The one to prepare for, if any is known yet.
    pub fn get(&self) -> Option<Arc<Manifest>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// One `tools.<name>` namespace.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Namespace {
    /// The guest name of the server.
    pub name: String,
    /// The guest names of its tools, which code can list; `None` when the server is not ready
    /// (starting or failed). Whatever the list, every name code writes is a call the host
    /// answers: it resolves other spellings, waits for a server starting, and explains the rest
    /// (a name it does not know, a tool its policy keeps from code).
    pub tools: Option<Vec<String>>,
}

/// Engine → host.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum EngineEvent {
    /// The program parsed and is running.
    Started,
    /// The guest awaits the host.
    Call(HostCall),
    /// One console call.
    Log {
        /// Which console method.
        stream: LogStream,
        /// Its arguments, formatted.
        text: String,
    },
    /// Something about the run the program's value does not tell (a promise rejected that
    /// nothing awaited, calls still running at the end, a program that returned nothing), in one
    /// sentence for the model.
    Warning {
        /// The sentence.
        text: String,
    },
    /// `progress(done, total?, message?)`: how far the program is, for the client while it
    /// runs. The engine sends at most one every [`PROGRESS_INTERVAL`], and the last one always.
    Progress(Progress),
}

/// How far a program says it is (`progress(done, total?, message?)`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Progress {
    /// Work done so far, as the program counts it.
    pub done: f64,
    /// All the work, when the program knows it.
    pub total: Option<f64>,
    /// What it is doing.
    pub message: Option<String>,
}

/// The longest `progress` message passed on; longer ones are cut.
pub const MAX_PROGRESS_MESSAGE: usize = 1024;

impl Progress {
    /// `progress(done, total?, message?)` as the guest called it, or what is wrong with it, for
    /// the guest (after the function's signature in its language).
    pub fn new(done: f64, total: Option<f64>, message: Option<String>) -> Result<Self, String> {
        if !done.is_finite() || done < 0.0 {
            return Err(format!(
                "done must be a finite number of 0 or more, got {done}"
            ));
        }
        if let Some(total) = total
            && (!total.is_finite() || total < 0.0)
        {
            return Err(format!(
                "total must be a finite number of 0 or more, got {total}"
            ));
        }
        let message = message.map(|mut message| {
            toolweave_jsonrpc::text::truncate(&mut message, MAX_PROGRESS_MESSAGE);
            message
        });
        Ok(Self {
            done,
            total,
            message,
        })
    }
}

/// The least time between two progress events of one execution: a loop that reports progress
/// on every turn costs the host one event per interval, not one per call.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

/// Holds back the progress a program reports faster than [`PROGRESS_INTERVAL`]: the latest one
/// waits until the interval is up or the engine waits for the host or ends, so none is lost
/// that is the last.
#[derive(Debug, Default)]
pub(crate) struct ProgressGate {
    held: Option<Progress>,
    last_sent: Option<std::time::Instant>,
}

impl ProgressGate {
    /// `progress` as the program reported it: the event to send now, or `None` while it is held.
    pub(crate) fn offer(&mut self, progress: Progress) -> Option<EngineEvent> {
        let now = std::time::Instant::now();
        if self
            .last_sent
            .is_some_and(|sent| now.duration_since(sent) < PROGRESS_INTERVAL)
        {
            self.held = Some(progress);
            return None;
        }
        self.held = None;
        self.last_sent = Some(now);
        Some(EngineEvent::Progress(progress))
    }

    /// The progress held back, to send before the engine waits or ends.
    pub(crate) fn release(&mut self) -> Option<EngineEvent> {
        let held = self.held.take()?;
        self.last_sent = Some(std::time::Instant::now());
        Some(EngineEvent::Progress(held))
    }
}

/// The console method a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LogStream {
    /// `console.log`
    Log,
    /// `console.info`
    Info,
    /// `console.warn`
    Warn,
    /// `console.error`
    Error,
    /// `console.debug`
    Debug,
}

/// A request of guest code, with the id its answer must carry.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HostCall {
    /// Unique within one execution.
    pub id: u64,
    /// What is asked.
    pub request: HostRequest,
}

/// What guest code can ask of the host.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum HostRequest {
    /// Call a tool. `tools.ns.fn(args)` sends `"ns.fn"`; `callMCPTool(name, args)` sends `name`
    /// as given. With `raw`, the host answers with the whole upstream result.
    Tool {
        /// The call name.
        name: String,
        /// The arguments as the guest passed them.
        args: serde_json::Value,
        /// Whether the guest asked for the unconverted result.
        raw: bool,
    },
    /// `searchTools(query, limit?)`.
    Search {
        /// What to look for.
        query: String,
        /// How many hits at most.
        limit: Option<u32>,
    },
    /// `describeTools(names)`.
    Describe {
        /// The names to describe.
        names: Vec<String>,
    },
    /// `resources.<server>.*` and `prompts.<server>.*`: a request to one server other than a
    /// tool call. It counts as a tool call against the execution's limits.
    Server {
        /// The server as code named it: its name in code or as configured.
        server: String,
        /// What is asked.
        ask: ServerAsk,
    },
    /// `store.*`, `results.get` and `handle(value)`: what the host keeps for the MCP session
    /// across its executions.
    Session(SessionAsk),
    /// `emit(block)`: an MCP content block (image, audio, text, resource link) for the answer,
    /// after its text. The host checks it and counts it against the execution's limits.
    Emit {
        /// The block as the guest wrote it.
        block: serde_json::Value,
    },
    /// `llm.ask(prompt, options?)` and `llm.think(request)`: a completion from the model's LLM,
    /// counted against the execution's LLM budgets rather than its tool calls.
    Llm(LlmAsk),
}

impl HostRequest {
    /// Whether this request reaches an upstream server (and counts against `--max-tool-calls`),
    /// rather than the gateway's catalog.
    pub fn reaches_server(&self) -> bool {
        matches!(self, Self::Tool { .. } | Self::Server { .. })
    }
}

/// What code can ask a server besides calling its tools.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ServerAsk {
    /// `resources.<server>.list()`: every resource the server lists.
    ListResources,
    /// `resources.<server>.templates()`: every resource template the server lists.
    ListResourceTemplates,
    /// `resources.<server>.read(uri)`.
    ReadResource {
        /// The resource's URI.
        uri: String,
    },
    /// `prompts.<server>.list()`: every prompt the server lists.
    ListPrompts,
    /// `prompts.<server>.get(name, args?)`.
    GetPrompt {
        /// The prompt's name.
        name: String,
        /// Its arguments (MCP prompt arguments are strings).
        arguments: serde_json::Map<String, serde_json::Value>,
    },
}

impl ServerAsk {
    /// The ask for MCP method `method`, with its `subject` (a resource's URI, a prompt's name)
    /// and `arguments` (a prompt's, an object or null). `Err` says what is wrong, for the guest.
    pub fn new(
        method: &str,
        subject: Option<String>,
        arguments: serde_json::Value,
    ) -> Result<Self, String> {
        let subject = |what: &str| {
            subject
                .clone()
                .ok_or_else(|| format!("{method} needs {what} (a string)"))
        };
        Ok(match method {
            "resources/list" => Self::ListResources,
            "resources/templates/list" => Self::ListResourceTemplates,
            "resources/read" => Self::ReadResource {
                uri: subject("the resource's URI")?,
            },
            "prompts/list" => Self::ListPrompts,
            "prompts/get" => Self::GetPrompt {
                name: subject("the prompt's name")?,
                arguments: match arguments {
                    serde_json::Value::Null => serde_json::Map::new(),
                    serde_json::Value::Object(arguments) => arguments,
                    _ => {
                        return Err(
                            "a prompt's arguments are an object like { name: \"value\" }"
                                .to_owned(),
                        );
                    }
                },
            },
            other => return Err(format!("internal error: no such server request as {other}")),
        })
    }

    /// The MCP method this is, as policy rules, the audit log and errors name it
    /// (`server.resources/read`).
    pub fn method(&self) -> &'static str {
        match self {
            Self::ListResources => "resources/list",
            Self::ListResourceTemplates => "resources/templates/list",
            Self::ReadResource { .. } => "resources/read",
            Self::ListPrompts => "prompts/list",
            Self::GetPrompt { .. } => "prompts/get",
        }
    }
}

/// What code asks of the state its MCP session keeps across executions: the store (JSON values
/// by key) and result handles (values too large for an answer, kept for a while).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum SessionAsk {
    /// `store.get(key)`: the value, or null when there is none.
    StoreGet {
        /// The key.
        key: String,
    },
    /// `store.set(key, value)`.
    StoreSet {
        /// The key.
        key: String,
        /// The value, as JSON.
        value: serde_json::Value,
    },
    /// `store.delete(key)`: whether there was a value.
    StoreDelete {
        /// The key.
        key: String,
    },
    /// `store.keys()`: every key, in the order they were first set.
    StoreKeys,
    /// `results.get(handle, {path?, offset?, limit?})`: a kept value, a part of it, or a piece
    /// of a string or array in it.
    ResultsGet {
        /// The handle's id.
        handle: String,
        /// Where in the value (`items.3.name`, `items[3].name`); the whole value when `None`.
        path: Option<String>,
        /// The first character (of a string) or item (of an array) to return.
        offset: Option<u64>,
        /// How many characters or items to return at most.
        limit: Option<u64>,
    },
    /// `handle(value)`: keep a value and answer with its handle.
    Keep {
        /// The value, as JSON.
        value: serde_json::Value,
    },
}

impl SessionAsk {
    /// The ask for the function code called (`store.get`, `results.get`, `handle`), with its
    /// arguments as JSON in order. `Err` says what is wrong, for the guest.
    pub fn new(function: &str, arguments: Vec<serde_json::Value>) -> Result<Self, String> {
        use serde_json::Value;
        let mut arguments = arguments.into_iter();
        let mut next = || arguments.next().unwrap_or(Value::Null);
        let key = |value: Value| match value {
            Value::String(key) => Ok(key),
            other => Err(format!(
                "{function}(key, ...): the key must be a string, got {}",
                json_type(&other)
            )),
        };
        Ok(match function {
            "store.get" => Self::StoreGet { key: key(next())? },
            "store.set" => {
                let key = key(next())?;
                let value = next();
                Self::StoreSet { key, value }
            }
            "store.delete" => Self::StoreDelete { key: key(next())? },
            "store.keys" => Self::StoreKeys,
            "handle" => Self::Keep { value: next() },
            "results.get" => {
                let handle = match next() {
                    Value::String(handle) => handle,
                    // The object the answer gave: `{handle, bytes, preview, shape}`.
                    Value::Object(mut described) => match described.remove("handle") {
                        Some(Value::String(handle)) => handle,
                        _ => return Err(RESULTS_GET_HANDLE.to_owned()),
                    },
                    _ => return Err(RESULTS_GET_HANDLE.to_owned()),
                };
                let options = match next() {
                    Value::Null => serde_json::Map::new(),
                    Value::Object(options) => options,
                    other => {
                        return Err(format!(
                            "results.get(handle, options): options must be an object like \
                             {{path, offset, limit}}, got {}",
                            json_type(&other)
                        ));
                    }
                };
                Self::results_get(handle, options)?
            }
            other => {
                return Err(format!(
                    "internal error: no such session function as {other}"
                ));
            }
        })
    }

    fn results_get(
        handle: String,
        mut options: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Self, String> {
        use serde_json::Value;
        let path = match options.remove("path") {
            None | Some(Value::Null) => None,
            Some(Value::String(path)) => Some(path),
            Some(other) => {
                return Err(format!(
                    "results.get: path must be a string like \"items.3.name\", got {}",
                    json_type(&other)
                ));
            }
        };
        let mut count = |name: &str| match options.remove(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(number)) if number.as_u64().is_some() => Ok(number.as_u64()),
            Some(other) => Err(format!(
                "results.get: {name} must be a whole number of 0 or more, got {other}"
            )),
        };
        let offset = count("offset")?;
        let limit = count("limit")?;
        if let Some(unknown) = options.keys().next() {
            return Err(format!(
                "results.get: unknown option \"{unknown}\"; the options are path, offset and limit"
            ));
        }
        Ok(Self::ResultsGet {
            handle,
            path,
            offset,
            limit,
        })
    }

    /// The function code called, as errors name it.
    pub fn function(&self) -> &'static str {
        match self {
            Self::StoreGet { .. } => "store.get",
            Self::StoreSet { .. } => "store.set",
            Self::StoreDelete { .. } => "store.delete",
            Self::StoreKeys => "store.keys",
            Self::ResultsGet { .. } => "results.get",
            Self::Keep { .. } => "handle",
        }
    }
}

/// What `llm.ask` and `llm.think` ask of the model's LLM.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LlmAsk {
    /// The conversation so far, oldest first; `llm.ask` sends one user message.
    pub messages: Vec<LlmMessage>,
    /// The system prompt, when code gave one.
    pub system: Option<String>,
    /// The most tokens the answer may take, when code gave it (the host's default otherwise).
    pub max_tokens: Option<u32>,
    /// The model code would like, a hint: the client (or the provider's settings) decides.
    pub model: Option<String>,
    /// `llm.think`: the answer is `{text, model, stopReason}`; `llm.ask`: the text alone.
    pub whole: bool,
}

/// One message of an [`LlmAsk`]'s conversation.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LlmMessage {
    /// Who said it.
    pub role: LlmRole,
    /// What was said.
    pub text: String,
}

/// Who said an [`LlmMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LlmRole {
    /// The asker.
    User,
    /// The model.
    Assistant,
}

impl LlmRole {
    /// Its name in MCP and in the providers' APIs: `user`, `assistant`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// The options `llm.ask` and `llm.think` take, as errors list them.
const LLM_OPTIONS: &str = "system, maxTokens (max_tokens in Python) and model";

impl LlmAsk {
    /// The ask for `llm.ask` (arguments: the prompt, then the options object or null) or
    /// `llm.think` (one argument: `{messages, system?, maxTokens?, model?}`). `Err` says what
    /// is wrong, for the guest.
    pub fn new(function: &str, arguments: Vec<serde_json::Value>) -> Result<Self, String> {
        use serde_json::Value;
        let mut arguments = arguments.into_iter();
        let mut next = || arguments.next().unwrap_or(Value::Null);
        let (messages, options, whole) = match function {
            "llm.ask" => {
                let prompt = match next() {
                    Value::String(prompt) if !prompt.is_empty() => prompt,
                    Value::String(_) => {
                        return Err("llm.ask(prompt, options?): the prompt is empty".to_owned());
                    }
                    other => {
                        return Err(format!(
                            "llm.ask(prompt, options?): the prompt must be a string, got {}",
                            json_type(&other)
                        ));
                    }
                };
                let options = match next() {
                    Value::Null => serde_json::Map::new(),
                    Value::Object(options) => options,
                    other => {
                        return Err(format!(
                            "llm.ask(prompt, options?): options must be an object like \
                             {{system, maxTokens, model}}, got {}",
                            json_type(&other)
                        ));
                    }
                };
                let message = LlmMessage {
                    role: LlmRole::User,
                    text: prompt,
                };
                (vec![message], options, false)
            }
            "llm.think" => {
                let mut request = match next() {
                    Value::Object(request) => request,
                    other => {
                        return Err(format!(
                            "llm.think(request): the request must be an object like \
                             {{messages: [{{role: \"user\", content: \"...\"}}], system, maxTokens}}, \
                             got {}",
                            json_type(&other)
                        ));
                    }
                };
                let messages = llm_messages(request.remove("messages"))?;
                (messages, request, true)
            }
            other => return Err(format!("internal error: no such llm function as {other}")),
        };
        Self::with_options(function, messages, options, whole)
    }

    fn with_options(
        function: &str,
        messages: Vec<LlmMessage>,
        mut options: serde_json::Map<String, serde_json::Value>,
        whole: bool,
    ) -> Result<Self, String> {
        use serde_json::Value;
        let mut text = |name: &str| match options.remove(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(format!(
                "{function}: {name} must be a string, got {}",
                json_type(&other)
            )),
        };
        let system = text("system")?;
        let model = text("model")?;
        let max_tokens = match options.remove("maxTokens") {
            None | Some(Value::Null) => None,
            Some(Value::Number(number)) if number.as_u64().is_some_and(|tokens| tokens >= 1) => {
                Some(u32::try_from(number.as_u64().unwrap_or(0)).unwrap_or(u32::MAX))
            }
            Some(other) => {
                return Err(format!(
                    "{function}: maxTokens must be a whole number of 1 or more, got {other}"
                ));
            }
        };
        if let Some(unknown) = options.keys().next() {
            return Err(format!(
                "{function}: unknown option \"{unknown}\"; the options are {LLM_OPTIONS}"
            ));
        }
        Ok(Self {
            messages,
            system,
            max_tokens,
            model,
            whole,
        })
    }
}

/// `llm.think`'s messages: a non-empty array of `{role: "user" | "assistant", content}`.
fn llm_messages(messages: Option<serde_json::Value>) -> Result<Vec<LlmMessage>, String> {
    use serde_json::Value;
    const SHAPE: &str = "an array like [{role: \"user\", content: \"...\"}]";
    let messages = match messages {
        Some(Value::Array(messages)) if !messages.is_empty() => messages,
        Some(Value::Array(_)) => {
            return Err(format!("llm.think: messages is empty; it must be {SHAPE}"));
        }
        None | Some(Value::Null) => {
            return Err(format!(
                "llm.think: messages is missing; it must be {SHAPE}"
            ));
        }
        Some(other) => {
            return Err(format!(
                "llm.think: messages must be {SHAPE}, got {}",
                json_type(&other)
            ));
        }
    };
    messages
        .into_iter()
        .enumerate()
        .map(|(index, message)| {
            let Value::Object(mut message) = message else {
                return Err(format!(
                    "llm.think: messages[{index}] must be an object like {{role: \"user\", content: \"...\"}}"
                ));
            };
            let role = match message.remove("role") {
                Some(Value::String(role)) if role == "user" => LlmRole::User,
                Some(Value::String(role)) if role == "assistant" => LlmRole::Assistant,
                other => {
                    return Err(format!(
                        "llm.think: messages[{index}].role must be \"user\" or \"assistant\", got {}",
                        other.map_or_else(|| "nothing".to_owned(), |role| role.to_string())
                    ));
                }
            };
            let text = match message.remove("content") {
                Some(Value::String(text)) => text,
                other => {
                    return Err(format!(
                        "llm.think: messages[{index}].content must be a string, got {}",
                        other.as_ref().map_or("nothing", json_type)
                    ));
                }
            };
            if let Some(unknown) = message.keys().next() {
                return Err(format!(
                    "llm.think: messages[{index}] has an unknown key \"{unknown}\"; a message has role and content"
                ));
            }
            Ok(LlmMessage { role, text })
        })
        .collect()
}

const RESULTS_GET_HANDLE: &str = "results.get(handle, options): handle must be the handle's id (a \
     string) or the object an answer gave, like {handle: \"h1\", ...}";

/// How an error names the type of a JSON value.
fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Host → engine.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum HostReply {
    /// The answer to one [`HostCall`]: a value, or an error message the guest sees as an `Error`.
    Result {
        /// The call's id.
        id: u64,
        /// The value, or why there is none.
        outcome: Result<serde_json::Value, String>,
    },
    /// Stop now (the client cancelled, or the host ended the execution). Also wakes an engine
    /// that is waiting for replies, which the cancel flag alone cannot.
    Cancel,
}

/// Asks a running engine to stop. Cheap to clone; safe to set from any thread.
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(Arc<AtomicBool>);

impl CancelFlag {
    /// A flag that is not set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the flag: the engine stops at its next check (within milliseconds).
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the flag is set.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// How one execution ended.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Outcome {
    /// The program's value as JSON, or why there is none.
    pub result: Result<serde_json::Value, EngineError>,
    /// What it used.
    pub stats: Stats,
}

/// What one execution used.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    /// Wall-clock time in the engine.
    pub duration: Duration,
    /// Host calls made.
    pub host_calls: u32,
    /// Console bytes produced.
    pub log_bytes: usize,
    /// Largest heap the guest held.
    pub memory_peak_bytes: usize,
}

/// Why an execution produced no value. Limits are the engine's observations, never the guest's
/// claims: a guest that throws `new Error("Timeout")` gets [`EngineError::Guest`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum EngineError {
    /// The program does not parse.
    #[error("SyntaxError at {line}:{column}: {message}")]
    Syntax {
        /// The parser's message.
        message: String,
        /// 1-based line in the submitted code.
        line: u32,
        /// 1-based column.
        column: u32,
        /// The line with a caret under the position.
        frame: String,
    },
    /// The program is longer than [`MAX_CODE_BYTES`].
    #[error("the code is {size} bytes, over the limit of {limit}")]
    CodeTooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// An uncaught throw or rejection.
    #[error("{name}: {message}")]
    Guest {
        /// The error's message (or the thrown value, formatted).
        message: String,
        /// The error's name (`TypeError`, ...), empty for thrown non-errors.
        name: String,
        /// 1-based line in the submitted code, when known.
        line: Option<u32>,
        /// 1-based column, when known.
        column: Option<u32>,
        /// Where it was raised, in the submitted code's lines, as the model reads it: a Python
        /// traceback, or for JavaScript the error, the line with a caret and the calls inside
        /// the program that led there.
        stack: Option<String>,
    },
    /// The deadline passed.
    #[error("timeout after {limit:?}")]
    Timeout {
        /// The deadline.
        limit: Duration,
    },
    /// The heap limit was hit.
    #[error("memory limit of {limit} bytes")]
    MemoryLimit {
        /// The limit.
        limit: usize,
    },
    /// The stack limit was hit.
    #[error("stack overflow")]
    StackOverflow,
    /// Console output passed its bound.
    #[error("console output over {limit} bytes")]
    LogLimit {
        /// The limit.
        limit: usize,
    },
    /// The result as JSON is too large.
    #[error("result of {size} bytes over {limit}")]
    ResultTooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The result cannot be expressed as JSON.
    #[error("unserializable result: {message}")]
    Unserializable {
        /// Why.
        message: String,
    },
    /// The guest made more tool calls than allowed.
    #[error("more than {limit} tool calls")]
    ToolCallLimit {
        /// The limit.
        limit: u32,
    },
    /// The guest had more timers pending at once than the engine keeps.
    #[error("more than {limit} timers pending")]
    TimerLimit {
        /// The limit.
        limit: usize,
    },
    /// The program awaits something nothing will settle.
    #[error("the program awaits a promise that can never settle")]
    NeverSettles,
    /// The cancel flag was set.
    #[error("cancelled")]
    Cancelled,
    /// A failure of the engine itself.
    #[error("internal engine error: {message}")]
    Internal {
        /// What failed.
        message: String,
    },
}
