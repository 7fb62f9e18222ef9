//! The worker process's side: engines in a process of their own, the same messages over pipes.
//!
//! A worker is the `toolweave` binary started again with a worker argument and a
//! [`WorkerKind`]; it runs exactly one execution and exits, so nothing outlives a program. A
//! JavaScript worker prepares its runtime while it waits for the job. The host side (starting
//! workers ahead of demand, driving one, killing one that overstays) is the gateway's.
//!
//! Why a process: Python's memory limit is enforced by a process-wide allocator that ends the
//! process when the guest goes past its hard ceiling, and an interpreter failure of any kind
//! (abort, stack overflow, memory-safety bug) takes only the worker down.
//!
//! Wire format: one JSON object per line, [`ToWorker`] on the worker's stdin and [`FromWorker`]
//! on its stdout. Nothing else is written to the worker's stdout.

use std::ffi::OsString;
use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc;
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::THREAD_STACK_HEADROOM;
use crate::alloc::stack_address;
use crate::confine::{self, Ceilings, ConfineError};
use crate::javascript::Prepared;
use crate::{
    CancelFlag, EngineError, EngineEvent, ExecuteRequest, HostReply, Language, Outcome, Stats,
};

/// Exit status of a worker whose guest went past its memory ceiling (the allocator's own code).
pub const MEMORY_EXIT_CODE: i32 = 65;

/// Host → worker.
#[derive(Debug, Serialize, Deserialize)]
pub enum ToWorker {
    /// Run this program (the first and only start a worker gets).
    Start(ExecuteRequest),
    /// An answer to one of its calls, or a cancel.
    Reply(HostReply),
}

/// Worker → host.
#[derive(Debug, Serialize, Deserialize)]
pub enum FromWorker {
    /// Something the engine reported.
    Event(EngineEvent),
    /// The last message: how the execution ended.
    Finished(Outcome),
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

/// Reads the host's replies from stdin until it closes; a cancel also sets the flag, so a busy
/// guest sees it at its next check.
fn read_replies(cancel: &CancelFlag, replies: &mpsc::Sender<HostReply>) {
    let mut input = std::io::stdin().lock();
    let mut line = String::new();
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => {
                // The host is gone: nothing will answer, stop.
                cancel.cancel();
                let _ = replies.send(HostReply::Cancel);
                return;
            }
            Ok(_) => {}
        }
        match serde_json::from_str(&line) {
            Ok(ToWorker::Reply(reply)) => {
                if matches!(reply, HostReply::Cancel) {
                    cancel.cancel();
                }
                if replies.send(reply).is_err() {
                    return;
                }
            }
            Ok(ToWorker::Start(_)) | Err(_) => {
                eprintln!("toolweave worker: a message from the host was not a reply");
            }
        }
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
            let _ = crate::transpile::transpile(WARM_UP_TYPESCRIPT, Language::TypeScript);
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
        limits: crate::EngineLimits {
            timeout: std::time::Duration::from_secs(1),
            memory_bytes: 16 * 1024 * 1024,
            stack_bytes: 256 * 1024,
            max_log_bytes: 4096,
            max_result_bytes: 4096,
            max_tool_calls: 4,
        },
        manifest: crate::Manifest {
            namespaces: vec![crate::Namespace {
                name: "warm".to_owned(),
                tools: Some(vec!["up".to_owned()]),
                hidden: Vec::new(),
            }],
        },
    };
    // The job and the messages cross the pipes as JSON: warm that code too.
    if let Ok(text) = serde_json::to_string(&ToWorker::Start(request.clone())) {
        let _ = serde_json::from_str::<ToWorker>(&text);
    }
    let (replies_tx, replies_rx) = mpsc::channel();
    let _ = crate::run(
        request,
        &mut |event| {
            let _ = serde_json::to_writer(std::io::sink(), &FromWorker::Event(event.clone()));
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

/// The worker's side: prepare, take one job from stdin, run it, report, exit.
///
/// The binary must use `monty_alloc::LimitedAllocator` as its global allocator: before the guest
/// runs, the worker arms it with the job's memory limit, so that going past it ends this process
/// (exit status [`MEMORY_EXIT_CODE`]) rather than the machine's memory.
pub fn worker_main(spec: WorkerSpec) -> ExitCode {
    ExitCode::from(run_worker(spec, WarmUp::Worker))
}

/// A worker's life after its process exists (started on its own, or forked by a fork server);
/// the exit status it ends with.
pub(crate) fn run_worker(spec: WorkerSpec, warm_up: WarmUp) -> u8 {
    // Confined first, while this is the only thread, before anything else happens; a worker
    // that cannot be confined reads its job only to refuse it.
    let confined = confine::confine(&spec.ceilings);
    // The engine runs on a thread with the stack an in-process engine thread gets: the main
    // thread's is fixed when the program starts, and deep programs need more.
    let engine = std::thread::Builder::new()
        .name("toolweave-worker-engine".to_owned())
        .stack_size(spec.stack_bytes.saturating_add(THREAD_STACK_HEADROOM))
        .spawn(move || run_one_job(spec.kind, warm_up, confined));
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
) -> u8 {
    // Everything that does not depend on the job happens before it arrives: the thread that will
    // read replies, a first run of the engine's own code (a fresh process otherwise pays for
    // faulting in the interpreter's code and data on the job's time), the JavaScript runtime.
    let cancel = CancelFlag::new();
    let (replies_tx, replies_rx) = mpsc::channel();
    let (go, gone) = mpsc::channel::<()>();
    {
        let cancel = cancel.clone();
        // Reads replies once this thread has read the job; it ends with the process.
        let _ = std::thread::Builder::new()
            .name("toolweave-worker-input".to_owned())
            .spawn(move || {
                if gone.recv().is_err() {
                    return;
                }
                read_replies(&cancel, &replies_tx);
            });
    }
    warm_up(kind, how);
    let stack_top = stack_address();
    let prepared = match kind {
        WorkerKind::JavaScript => Some(Prepared::new(stack_top)),
        WorkerKind::Python => None,
    };
    // The job, read on this thread: no hand-off between reading it and running it.
    let mut line = String::new();
    let request = match std::io::stdin().lock().read_line(&mut line) {
        // The pool was dropped before it needed this worker.
        Ok(0) | Err(_) => return 0,
        Ok(_) => match serde_json::from_str::<ToWorker>(&line) {
            Ok(ToWorker::Start(request)) => request,
            Ok(ToWorker::Reply(_)) | Err(_) => {
                eprintln!("toolweave worker: the first message was not a job");
                return 1;
            }
        },
    };
    let _ = go.send(());

    let stdout = std::io::stdout();
    let output = Mutex::new(BufWriter::new(stdout.lock()));
    let write = |message: &FromWorker| {
        let mut output = output.lock().unwrap_or_else(PoisonError::into_inner);
        let written = serde_json::to_writer(&mut *output, message)
            .map_err(std::io::Error::from)
            .and_then(|()| output.write_all(b"\n"))
            .and_then(|()| output.flush());
        if written.is_err() {
            // The host stopped listening; it will not read an outcome either.
            std::process::exit(1);
        }
    };
    if let Err(error) = confined {
        write(&FromWorker::Finished(failed(EngineError::Internal {
            message: format!("{error}; the program was not run"),
        })));
        return 1;
    }
    arm_memory(&request);
    let outcome = match (request.language, prepared) {
        (Language::JavaScript | Language::TypeScript, Some(Ok(prepared))) => {
            let (outcome, spent) = prepared.run(
                request,
                &mut |event| write(&FromWorker::Event(event)),
                &replies_rx,
                &cancel,
            );
            // Exiting frees everything; skip tearing the runtime down.
            std::mem::forget(spent);
            outcome
        }
        (Language::JavaScript | Language::TypeScript, Some(Err(error))) => failed(error),
        (Language::Python, None) => crate::run(
            request,
            &mut |event| write(&FromWorker::Event(event)),
            &replies_rx,
            &cancel,
        ),
        (language, _) => failed(EngineError::Internal {
            message: format!(
                "a {} worker was given a {language:?} program",
                kind.argument()
            ),
        }),
    };
    write(&FromWorker::Finished(outcome));
    0
}
