//! The worker process's side: engines in a process of their own, the same messages over pipes.
//!
//! A worker is the `toolweave` binary started again with a worker argument and a
//! [`WorkerKind`]; it runs executions one after another, each in a fresh engine runtime, until
//! the host closes its stdin, so nothing a program leaves behind reaches the next. A JavaScript
//! worker prepares its next runtime while it waits for the job. The host sends a worker the
//! executions of one session only (`workers.rs`). The host side (starting
//! workers ahead of demand, driving one, killing one that overstays) is `workers.rs`.
//!
//! Why a process: Python's memory limit is enforced by a process-wide allocator that ends the
//! process when the guest goes past its hard ceiling, and an interpreter failure of any kind
//! (abort, stack overflow, memory-safety bug) takes only the worker down.
//!
//! Wire format: one JSON object per line, [`ToWorker`] on the worker's stdin and [`FromEngine`]
//! on its stdout. Nothing else is written to the worker's stdout.

use std::cell::{Cell, RefCell};
use std::ffi::OsString;
use std::io::{BufWriter, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use serde::{Deserialize, Serialize};

use toolweave_sandbox::{
    CancelFlag, EngineError, EngineEvent, EngineLimits, ExecuteRequest, HostReply, Language,
    Manifest, Outcome, PreparedJavaScript, Replies, Stats, THREAD_STACK_HEADROOM, stack_address,
};

use toolweave_jsonrpc::buffer::{LineBuffer, LineError};

use crate::confine::{self, Ceilings, ConfineError};

/// Exit status of a worker whose guest went past its memory ceiling (the allocator's own code).
pub const MEMORY_EXIT_CODE: i32 = 65;

/// The version of the execution protocol (`docs/protocol.md`) this build speaks. Every job
/// carries the host's; a worker of another version runs nothing and says which versions met.
/// It changes whenever a message changes in a way the other side cannot read.
pub const PROTOCOL_VERSION: u32 = 1;

/// Host → worker.
#[derive(Debug, Serialize, Deserialize)]
pub enum ToWorker {
    /// The tools the job will most likely name, sent while the worker waits for it: a
    /// JavaScript worker sets them up ahead, off the job's time.
    Expect(Arc<Manifest>),
    /// Run this program (when the worker runs none).
    Start(WorkerJob),
    /// An answer to one of its calls, or a cancel.
    Reply(HostReply),
}

/// A job as it crosses to a worker: an [`ExecuteRequest`] whose manifest is left out when it
/// is the one the worker was told to expect.
#[derive(Debug, Serialize, Deserialize)]
pub struct WorkerJob {
    /// The program.
    pub code: String,
    /// Its language.
    pub language: Language,
    /// Limits for this execution.
    pub limits: EngineLimits,
    /// The names guest code can call; `None`: those the worker expects (the last
    /// [`ToWorker::Expect`], or the manifest its fork server gave it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Arc<Manifest>>,
    /// The host's [`PROTOCOL_VERSION`]; 0 when the host sent none.
    #[serde(default)]
    pub protocol: u32,
}

impl WorkerJob {
    /// The job for `request`, to a worker told to expect `expected`.
    pub fn new(request: &ExecuteRequest, expected: Option<&Arc<Manifest>>) -> Self {
        let known = expected.is_some_and(|expected| {
            Arc::ptr_eq(expected, &request.manifest) || expected == &request.manifest
        });
        Self {
            code: request.code.clone(),
            language: request.language,
            limits: request.limits,
            manifest: (!known).then(|| request.manifest.clone()),
            protocol: PROTOCOL_VERSION,
        }
    }

    /// Why this worker cannot run the job: the host speaks another protocol version.
    fn version_mismatch(&self) -> Option<String> {
        (self.protocol != PROTOCOL_VERSION).then(|| {
            let host = match self.protocol {
                0 => "no protocol version (one older than versions)".to_owned(),
                version => format!("execution protocol version {version}"),
            };
            format!(
                "the host sent a job in {host}, and this worker speaks version \
                 {PROTOCOL_VERSION}; run the same toolweave version on both sides"
            )
        })
    }
}

/// Worker → host.
#[derive(Debug, Serialize, Deserialize)]
pub enum FromEngine {
    /// Something the engine reported.
    Event(EngineEvent),
    /// The last message: how the execution ended.
    Finished(Outcome),
}

/// The longest line a worker reads before its job: a [`ToWorker::Expect`] or the
/// [`ToWorker::Start`] itself, which hold the names of the catalog's tools and a program of at
/// most [`toolweave_sandbox::MAX_CODE_BYTES`]. As long as the longest message an upstream server may send.
pub(crate) const MAX_SETUP_LINE_BYTES: usize = 64 * 1024 * 1024;
/// Room for what surrounds the text of a message on its line (the message's kind, a call id).
const ENVELOPE_BYTES: usize = 1024;
/// The most bytes JSON writes for one byte of text (a control character as `\u0001`).
const MAX_ESCAPE_BYTES: usize = 6;

impl ToWorker {
    /// The longest line the host sends a worker whose job runs under `limits`: a reply whose
    /// outcome is, as JSON, at most the memory limit. The guest holds a value's text whole before
    /// it parses it, so the host refuses a larger one rather than send it.
    pub fn max_reply_line(limits: &EngineLimits) -> usize {
        limits.memory_bytes.saturating_add(ENVELOPE_BYTES)
    }
}

impl FromEngine {
    /// The longest line a worker whose job runs under `limits` writes: one message, whose text
    /// the guest made within its memory (a call's arguments, an error's message and stack) or
    /// its console limit, escaped, or the result within its own limit.
    pub fn max_line(limits: &EngineLimits) -> usize {
        limits
            .memory_bytes
            .saturating_add(limits.max_log_bytes)
            .saturating_mul(MAX_ESCAPE_BYTES)
            .saturating_add(limits.max_result_bytes)
            .saturating_add(ENVELOPE_BYTES)
    }
}

/// How to start a worker: normally the running `toolweave` binary with its worker argument.
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    /// The program.
    pub program: PathBuf,
    /// Its arguments (the pool adds the worker kind after them).
    pub args: Vec<OsString>,
    /// Variables the worker gets; its environment is otherwise empty.
    pub env: Vec<(OsString, OsString)>,
}

/// The worker's end of its pipes to the host, used by the engine thread alone: the host's
/// messages are read when the engine waits for them, and the engine's events are written
/// together just before it waits or ends. So a batch of calls wakes the host once, and an
/// event nobody waits for (`Started`, a console line) does not wake it at all.
///
/// A guest busy computing reads nothing; the host stops such a worker by killing it.
struct HostPipe {
    /// What was read from stdin, cut into lines.
    lines: RefCell<LineBuffer>,
    /// Where stdin is read into: made once, before the job.
    chunk: RefCell<Vec<u8>>,
    /// The longest line the host may send now: a setup message until the job arrives, a reply
    /// afterwards.
    max_line: Cell<usize>,
    output: RefCell<BufWriter<std::io::Stdout>>,
    /// The running job's: set when the host cancels it or goes away.
    cancel: RefCell<CancelFlag>,
}

/// How much is read from stdin at a time: what a pipe holds.
const READ_CHUNK: usize = 64 * 1024;

impl HostPipe {
    fn new(cancel: CancelFlag) -> Self {
        Self {
            lines: RefCell::new(LineBuffer::default()),
            chunk: RefCell::new(vec![0u8; READ_CHUNK]),
            max_line: Cell::new(MAX_SETUP_LINE_BYTES),
            output: RefCell::new(BufWriter::new(std::io::stdout())),
            cancel: RefCell::new(cancel),
        }
    }

    /// A job under `limits` begins: from now on the host sends its replies, and a cancel sets
    /// `cancel`.
    fn begin(&self, limits: &EngineLimits, cancel: CancelFlag) {
        self.max_line.set(ToWorker::max_reply_line(limits));
        *self.cancel.borrow_mut() = cancel;
    }

    /// The job has ended: what comes next is setup for the next one.
    fn end(&self) {
        self.max_line.set(MAX_SETUP_LINE_BYTES);
    }

    /// Queues a message for the host.
    fn send(&self, message: &FromEngine) {
        let mut output = self.output.borrow_mut();
        let written = serde_json::to_writer(&mut *output, message)
            .map_err(std::io::Error::from)
            .and_then(|()| output.write_all(b"\n"));
        if written.is_err() {
            // The host stopped listening; it will not read an outcome either.
            std::process::exit(1);
        }
    }

    /// Queues an event of the engine's; progress goes out at once (the engine sends at most one
    /// every `PROGRESS_INTERVAL`), so the client hears of it while busy code runs on.
    fn send_event(&self, event: EngineEvent) {
        let live = matches!(event, EngineEvent::Progress(_));
        self.send(&FromEngine::Event(event));
        if live {
            self.flush();
        }
    }

    /// Sends what is queued.
    fn flush(&self) {
        if self.output.borrow_mut().flush().is_err() {
            std::process::exit(1);
        }
    }

    /// The host's next message, waiting at most `timeout` for it (`None`: for as long as it
    /// takes). `Disconnected` once the host has closed the pipe.
    fn next(&self, timeout: Option<Duration>) -> Result<ToWorker, RecvTimeoutError> {
        let deadline = timeout.map(|timeout| Instant::now() + timeout);
        loop {
            if let Some(message) = self.take_message() {
                return Ok(message);
            }
            let wait = match deadline {
                None => PollTimeout::NONE,
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    // Rounded up: a wait that ends early would only wait again.
                    let millis = left.as_micros().div_ceil(1000);
                    PollTimeout::try_from(millis).unwrap_or(PollTimeout::MAX)
                }
            };
            let stdin = std::io::stdin();
            let mut ready = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
            match poll(&mut ready, wait) {
                Ok(0) => {
                    if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                        return Err(RecvTimeoutError::Timeout);
                    }
                    continue;
                }
                Ok(_) => {}
                // Waited again, for the time left: reading now could block past the deadline.
                Err(Errno::EINTR) => continue,
                Err(_) => return Err(self.host_gone()),
            }
            let mut chunk = self.chunk.borrow_mut();
            match nix::unistd::read(stdin.as_fd(), &mut chunk) {
                Ok(0) => return Err(self.host_gone()),
                Ok(read) => self.lines.borrow_mut().extend(&chunk[..read]),
                Err(Errno::EINTR | Errno::EAGAIN) => {}
                Err(_) => return Err(self.host_gone()),
            }
        }
    }

    /// The next message among the lines read, if a whole one is there. A line that is too long
    /// or cannot be read ends the worker: the host's messages can no longer be followed.
    fn take_message(&self) -> Option<ToWorker> {
        let max = self.max_line.get();
        let taken = self.lines.borrow_mut().take::<ToWorker>(max);
        match taken {
            Ok(message) => message,
            Err(LineError::TooLong(length)) => self.give_up(format!(
                "a message from the host is longer than the {max} bytes it may be (at least \
                 {length} bytes)"
            )),
            Err(LineError::Unreadable(error)) => self.give_up(format!(
                "a message from the host could not be read: {error}"
            )),
        }
    }

    /// Reports `why` as the execution's outcome and ends the process.
    fn give_up(&self, why: String) -> ! {
        eprintln!("toolweave worker: {why}");
        self.send(&FromEngine::Finished(failed(EngineError::Internal {
            message: why,
        })));
        self.flush();
        std::process::exit(1);
    }

    /// The host is gone: nothing will answer, stop.
    fn host_gone(&self) -> RecvTimeoutError {
        self.cancel.borrow().cancel();
        RecvTimeoutError::Disconnected
    }

    /// A reply, or why there is none; anything else the host sends now is out of place.
    fn reply(&self, timeout: Duration) -> Result<HostReply, RecvTimeoutError> {
        loop {
            match self.next(Some(timeout))? {
                ToWorker::Reply(reply) => {
                    if matches!(reply, HostReply::Cancel) {
                        self.cancel.borrow().cancel();
                    }
                    return Ok(reply);
                }
                ToWorker::Start(_) | ToWorker::Expect(_) => {
                    eprintln!("toolweave worker: a message from the host was not a reply");
                }
            }
        }
    }
}

impl Replies for HostPipe {
    fn recv_timeout(&self, timeout: Duration) -> Result<HostReply, RecvTimeoutError> {
        self.flush();
        self.reply(timeout)
    }

    fn try_recv(&self) -> Option<HostReply> {
        self.reply(Duration::ZERO).ok()
    }
}

/// How much of the engine's own code a process runs before its first job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WarmUp {
    /// A worker: the TypeScript front end, and for Python a whole small program (the
    /// JavaScript runtime is prepared separately, and each page a worker touches costs it, so a
    /// JavaScript worker runs no program first).
    Worker,
    /// A fork server: a whole small program in either language, once, for every worker it forks.
    ForkServer,
    /// None: a forked worker whose job is already waiting.
    None,
}

/// Runs the engine's own code once on a small program with a tool call, answered here, so the
/// job finds it warm. What it allocates is gone before the memory limit is armed.
pub(crate) fn warm_up(kind: WorkerKind, how: WarmUp) {
    if how == WarmUp::None {
        return;
    }
    let (language, code) = match kind {
        WorkerKind::JavaScript => {
            toolweave_sandbox::warm_up_compiler(WARM_UP_TYPESCRIPT);
            if how == WarmUp::Worker {
                return;
            }
            (Language::TypeScript, WARM_UP_TYPESCRIPT)
        }
        WorkerKind::Python => (Language::Python, WARM_UP_PYTHON),
    };
    let request = ExecuteRequest {
        code: code.to_owned(),
        language,
        limits: EngineLimits {
            timeout: std::time::Duration::from_secs(1),
            memory_bytes: 16 * 1024 * 1024,
            stack_bytes: 256 * 1024,
            max_log_bytes: 4096,
            max_result_bytes: 4096,
            max_tool_calls: 4,
        },
        manifest: std::sync::Arc::new(Manifest {
            namespaces: vec![toolweave_sandbox::Namespace {
                name: "warm".to_owned(),
                tools: Some(vec!["up".to_owned()]),
            }],
        }),
    };
    // The job and the messages cross the pipes as JSON: warm that code too.
    if let Ok(text) = serde_json::to_string(&ToWorker::Start(WorkerJob::new(&request, None))) {
        let _ = serde_json::from_str::<ToWorker>(&text);
    }
    let (replies_tx, replies_rx) = mpsc::channel();
    let _ = toolweave_sandbox::execute(
        request,
        &mut |event| {
            let _ = serde_json::to_writer(std::io::sink(), &FromEngine::Event(event.clone()));
            if let EngineEvent::Call(call) = event {
                let _ = replies_tx.send(HostReply::Result {
                    id: call.id,
                    outcome: Ok(serde_json::json!({ "values": [1, 2, 3] })),
                });
            }
        },
        &replies_rx,
        &CancelFlag::new(),
    );
}

/// What a Python worker runs before its job.
const WARM_UP_PYTHON: &str = "result = await tools.warm.up(n=1)
total = sum(value * 2 for value in result['values'])
print(f'{total}')
{'total': total, 'items': [str(item) for item in range(3)]}
";

/// What a JavaScript worker transpiles (and a fork server also runs) before its job.
const WARM_UP_TYPESCRIPT: &str = "interface Item { n: number }
const items: Item[] = (await tools.warm.up({ n: 1 })).values.map((n: number) => ({ n }));
const total = items.reduce((sum, item) => sum + item.n, 0);
console.log(`${total}`);
({ total })
";

/// Arms the process-wide allocator. Python's interpreter checks the soft limit itself (a typed
/// `MemoryError`) and the allocator ends the process past the hard ceiling above it; a JavaScript
/// guest has its own heap budget, so the ceiling only stops the host side of the engine from
/// running away (say, holding a huge tool result).
fn arm_memory(request: &ExecuteRequest) {
    let limit = match request.language {
        Language::JavaScript | Language::TypeScript => request
            .limits
            .memory_bytes
            .saturating_mul(2)
            .saturating_add(64 * 1024 * 1024),
        // Monty checks the limit itself (a typed error); the ceiling above it ends the process.
        Language::Python => request.limits.memory_bytes,
    };
    if let Err(error) = monty_alloc::set_limit(Some(limit), false) {
        eprintln!("toolweave worker: memory limit not enforced: {error}");
    }
}

fn failed(error: EngineError) -> Outcome {
    Outcome {
        result: Err(error),
        stats: Stats::default(),
    }
}

/// What a worker is started as: its kind and the ceilings it confines itself to. Written on its
/// command line by the host, after the worker argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerSpec {
    /// What it runs.
    pub kind: WorkerKind,
    /// Its rlimits.
    pub ceilings: Ceilings,
    /// The guest stack limit its engine thread is sized for.
    pub stack_bytes: usize,
}

impl WorkerSpec {
    /// The command-line arguments naming this spec.
    pub fn arguments(&self) -> [String; 4] {
        [
            self.kind.argument().to_owned(),
            self.ceilings.address_space.to_string(),
            self.ceilings.cpu_seconds.to_string(),
            self.stack_bytes.to_string(),
        ]
    }

    /// The spec named by a worker's command-line arguments.
    pub fn parse(arguments: &[String]) -> Result<Self, String> {
        let [kind, address_space, cpu_seconds, stack_bytes] = arguments else {
            return Err(format!(
                "expected <kind> <address-space-bytes> <cpu-seconds> <stack-bytes>, got \
                 {arguments:?}"
            ));
        };
        let kind = WorkerKind::from_argument(kind)
            .ok_or_else(|| format!("unknown worker kind {kind:?}: javascript or python"))?;
        let number = |text: &String| {
            text.parse::<u64>()
                .map_err(|error| format!("bad ceiling {text:?}: {error}"))
        };
        Ok(Self {
            kind,
            ceilings: Ceilings {
                address_space: number(address_space)?,
                cpu_seconds: number(cpu_seconds)?,
            },
            stack_bytes: usize::try_from(number(stack_bytes)?)
                .map_err(|error| format!("bad stack size: {error}"))?,
        })
    }
}

/// What a worker is started for: it prepares for one language while it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerKind {
    /// JavaScript and TypeScript: the worker prepares a QuickJS runtime while it waits.
    JavaScript,
    /// Python: nothing to prepare, Monty starts in microseconds.
    Python,
}

impl WorkerKind {
    /// The argument that names this kind on a worker's command line.
    pub fn argument(self) -> &'static str {
        match self {
            Self::JavaScript => "javascript",
            Self::Python => "python",
        }
    }

    /// The kind named by a worker's command-line argument.
    pub fn from_argument(argument: &str) -> Option<Self> {
        match argument {
            "javascript" => Some(Self::JavaScript),
            "python" => Some(Self::Python),
            _ => None,
        }
    }

    /// Whether this kind of worker runs `language`.
    pub fn runs(self, language: Language) -> bool {
        match language {
            Language::JavaScript | Language::TypeScript => self == Self::JavaScript,
            Language::Python => self == Self::Python,
        }
    }
}

/// The worker's side: prepare, take a job from stdin, run it, report, and again, until the host
/// closes stdin.
///
/// The binary must use `monty_alloc::LimitedAllocator` as its global allocator: before the guest
/// runs, the worker arms it with the job's memory limit, so that going past it ends this process
/// (exit status [`MEMORY_EXIT_CODE`]) rather than the machine's memory.
pub fn worker_main(spec: WorkerSpec) -> ExitCode {
    ExitCode::from(run_worker(spec, WarmUp::Worker, None))
}

/// A worker's life after its process exists (started on its own, or forked by a fork server,
/// then with the manifest the fork server was given, as if told to expect it); the exit status
/// it ends with.
pub(crate) fn run_worker(spec: WorkerSpec, warm_up: WarmUp, expected: Option<Arc<Manifest>>) -> u8 {
    // Confined first, while this is the only thread, before anything else happens; a worker
    // that cannot be confined reads its job only to refuse it.
    let confined = confine::confine(&spec.ceilings);
    // The engine runs on a thread with the stack an in-process engine thread gets: the main
    // thread's is fixed when the program starts, and deep programs need more.
    let engine = std::thread::Builder::new()
        .name("toolweave-worker-engine".to_owned())
        .stack_size(spec.stack_bytes.saturating_add(THREAD_STACK_HEADROOM))
        .spawn(move || run_one_job(spec.kind, warm_up, confined, expected));
    // This thread only waits for the engine's, and then exits: freeing the process's memory
    // (exit unmaps it on the last thread, this one) is work nobody waits for, done on cores the
    // next execution does not need. The engine thread, started before, keeps its priority.
    confine::step_aside();
    match engine.map(std::thread::JoinHandle::join) {
        Ok(Ok(code)) => code,
        Ok(Err(_)) => {
            eprintln!("toolweave worker: the engine thread panicked");
            1
        }
        Err(error) => {
            eprintln!("toolweave worker: cannot start the engine thread: {error}");
            1
        }
    }
}

fn run_one_job(
    kind: WorkerKind,
    how: WarmUp,
    confined: Result<confine::LandlockState, ConfineError>,
    mut expected: Option<Arc<Manifest>>,
) -> u8 {
    // Everything that does not depend on the job happens before it arrives: a first run of the
    // engine's own code (a fresh process otherwise pays for faulting in the interpreter's code
    // and data on the job's time), the JavaScript runtime.
    let host = HostPipe::new(CancelFlag::new());
    warm_up(kind, how);
    let stack_top = stack_address();
    let mut first = true;
    loop {
        // A fresh runtime for every job: nothing a program left (globals, prototypes, timers,
        // pending promises, its heap) reaches the next one.
        let prepared = match kind {
            WorkerKind::JavaScript => Some(PreparedJavaScript::new(stack_top)),
            WorkerKind::Python => None,
        };
        let job = match next_job(&host, &mut expected, first) {
            Ok(Some(job)) => job,
            // The host let this worker go: the pool was dropped, or the worker is not kept.
            Ok(None) => return 0,
            Err(()) => return 1,
        };
        first = false;
        let request = match accepted(&host, job, expected.take(), &confined) {
            Ok(request) => request,
            Err(()) => return 1,
        };
        // The next job of the same session most likely names the same tools.
        expected = Some(request.manifest.clone());
        let cancel = CancelFlag::new();
        host.begin(&request.limits, cancel.clone());
        arm_memory(&request);
        let (outcome, spent) = execute_job(kind, request, prepared, &host, &cancel);
        host.send(&FromEngine::Finished(outcome));
        host.flush();
        // The runtime is freed before the next is made, off the answer's time.
        drop(spent);
        host.end();
    }
}

/// The next job, reading what the host sends until it comes: `None` once the host has closed
/// the pipe. Replies between jobs answer calls of the job before, which ended without them.
fn next_job(
    host: &HostPipe,
    expected: &mut Option<Arc<Manifest>>,
    first: bool,
) -> Result<Option<WorkerJob>, ()> {
    loop {
        match host.next(None) {
            Ok(ToWorker::Expect(manifest)) => *expected = Some(manifest),
            Ok(ToWorker::Start(job)) => return Ok(Some(job)),
            Ok(ToWorker::Reply(_)) if first => {
                eprintln!("toolweave worker: a reply came before the job");
                return Err(());
            }
            Ok(ToWorker::Reply(_)) => {}
            Err(_) => return Ok(None),
        }
    }
}

/// The request a job asks for, if this worker can run it; otherwise its outcome says why.
fn accepted(
    host: &HostPipe,
    job: WorkerJob,
    expected: Option<Arc<Manifest>>,
    confined: &Result<confine::LandlockState, ConfineError>,
) -> Result<ExecuteRequest, ()> {
    let refusal = if let Some(mismatch) = job.version_mismatch() {
        mismatch
    } else if let Err(error) = confined {
        format!("{error}; the program was not run")
    } else if let Some(manifest) = job.manifest.or(expected) {
        return Ok(ExecuteRequest {
            code: job.code,
            language: job.language,
            limits: job.limits,
            manifest,
        });
    } else {
        "the job named no tools and none were expected".to_owned()
    };
    host.send(&FromEngine::Finished(failed(EngineError::Internal {
        message: refusal,
    })));
    host.flush();
    Err(())
}

/// Runs one job; what is left of its runtime is handed back to be dropped after the answer.
fn execute_job(
    kind: WorkerKind,
    request: ExecuteRequest,
    prepared: Option<Result<PreparedJavaScript, EngineError>>,
    host: &HostPipe,
    cancel: &CancelFlag,
) -> (Outcome, Option<toolweave_sandbox::SpentJavaScript>) {
    match (request.language, prepared) {
        (Language::JavaScript | Language::TypeScript, Some(Ok(prepared))) => {
            let (outcome, spent) =
                prepared.execute(request, &mut |event| host.send_event(event), host, cancel);
            (outcome, Some(spent))
        }
        (Language::JavaScript | Language::TypeScript, Some(Err(error))) => (failed(error), None),
        (Language::Python, None) => (
            toolweave_sandbox::execute(request, &mut |event| host.send_event(event), host, cancel),
            None,
        ),
        (language, _) => (
            failed(EngineError::Internal {
                message: format!(
                    "a {} worker was given a {language:?} program",
                    kind.argument()
                ),
            }),
            None,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reply_the_host_may_send_fits_the_line_a_worker_takes() {
        let limits = EngineLimits {
            timeout: Duration::from_secs(1),
            memory_bytes: 1000,
            stack_bytes: 1,
            max_log_bytes: 1,
            max_result_bytes: 1,
            max_tool_calls: 1,
        };
        // The host refuses an outcome whose JSON is longer than the memory limit.
        let outcome: Result<serde_json::Value, String> =
            Ok(serde_json::Value::String("x".repeat(998)));
        assert_eq!(
            serde_json::to_vec(&outcome).unwrap().len() - r#"{"Ok":}"#.len(),
            1000
        );
        let reply = ToWorker::Reply(HostReply::Result {
            id: u64::MAX,
            outcome,
        });
        let line = serde_json::to_vec(&reply).unwrap();
        assert!(
            line.len() <= ToWorker::max_reply_line(&limits),
            "{}",
            line.len()
        );
    }
}
