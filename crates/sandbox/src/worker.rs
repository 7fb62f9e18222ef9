//! Engines in worker processes: the same messages, over pipes.
//!
//! A worker is the `toolweave` binary started again with a worker argument; it runs exactly one
//! execution and exits, so nothing outlives a program. Workers are started ahead of demand: a
//! waiting worker has already prepared its JavaScript runtime. The host side keeps the job's
//! interface unchanged ([`Job`]): events arrive through `emit`, the outcome through `finished`.
//!
//! Why a process: Python's memory limit is enforced by a process-wide allocator that ends the
//! process when the guest goes past its hard ceiling, and an interpreter failure of any kind
//! (abort, stack overflow, memory-safety bug) takes only the worker down. The host owns every
//! deadline: a worker that does not finish in time is killed.
//!
//! Wire format: one JSON object per line, [`ToWorker`] on the worker's stdin and [`FromWorker`]
//! on its stdout. Nothing else is written to the worker's stdout.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::alloc::stack_address;
use crate::javascript::Prepared;
use crate::{
    CancelFlag, EngineError, EngineEvent, ExecuteRequest, HostReply, Job, Language, Outcome, Stats,
};

/// Exit status of a worker whose guest went past its memory ceiling (the allocator's own code).
pub const MEMORY_EXIT_CODE: i32 = 65;
/// How long a worker may run past its deadline before the host kills it.
const DEADLINE_GRACE: Duration = Duration::from_millis(1000);
/// How long a cancelled worker gets to stop on its own before the host kills it.
const CANCEL_GRACE: Duration = Duration::from_millis(250);
/// How often the host looks at the clock while waiting for replies to forward.
const WATCH_INTERVAL: Duration = Duration::from_millis(50);

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
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables the worker gets; its environment is otherwise empty.
    pub env: Vec<(OsString, OsString)>,
}

/// Worker processes started ahead of demand. Cheap to clone.
#[derive(Debug, Clone)]
pub struct WorkerPool {
    inner: Arc<PoolInner>,
}

#[derive(Debug)]
struct PoolInner {
    command: WorkerCommand,
    idle: Mutex<Vec<Worker>>,
    idle_target: usize,
}

/// A started worker waiting for its job.
#[derive(Debug)]
struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
}

impl WorkerPool {
    /// A pool that keeps `idle_target` workers started; the first start in the background now.
    pub fn new(command: WorkerCommand, idle_target: usize) -> Self {
        let pool = Self {
            inner: Arc::new(PoolInner {
                command,
                idle: Mutex::new(Vec::new()),
                idle_target,
            }),
        };
        pool.replenish();
        pool
    }

    /// Runs `job` in a worker. The outcome always arrives through the job's `finished`.
    pub fn submit(&self, job: Job) {
        let idle = self
            .inner
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let pool = self.clone();
        let spawned = std::thread::Builder::new()
            .name("toolweave-worker-host".to_owned())
            .spawn(move || {
                let worker = match idle {
                    Some(worker) => Ok(worker),
                    None => pool.inner.start_worker(),
                };
                pool.replenish();
                match worker {
                    Ok(worker) => drive(worker, job),
                    Err(error) => (job.finished)(failed(EngineError::Internal {
                        message: format!("cannot start a worker process: {error}"),
                    })),
                }
            });
        if let Err(error) = spawned {
            tracing::error!(%error, "cannot start a thread for a worker process");
        }
    }

    /// Starts workers in the background until `idle_target` are waiting.
    fn replenish(&self) {
        let missing = {
            let idle = self
                .inner
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            self.inner.idle_target.saturating_sub(idle.len())
        };
        if missing == 0 {
            return;
        }
        let inner = self.inner.clone();
        let spawned = std::thread::Builder::new()
            .name("toolweave-worker-start".to_owned())
            .spawn(move || {
                for _ in 0..missing {
                    match inner.start_worker() {
                        Ok(worker) => {
                            let mut idle =
                                inner.idle.lock().unwrap_or_else(PoisonError::into_inner);
                            if idle.len() < inner.idle_target {
                                idle.push(worker);
                            } else {
                                drop(idle);
                                stop(worker.child);
                            }
                        }
                        Err(error) => {
                            tracing::warn!(%error, "cannot start a worker process ahead of time");
                            return;
                        }
                    }
                }
            });
        if let Err(error) = spawned {
            tracing::warn!(%error, "cannot start a thread to start worker processes");
        }
    }
}

impl PoolInner {
    fn start_worker(&self) -> std::io::Result<Worker> {
        let mut command = Command::new(&self.command.program);
        command
            .args(&self.command.args)
            .env_clear()
            .envs(self.command.env.iter().map(|(key, value)| (key, value)))
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            stop(child);
            return Err(std::io::Error::other("the worker's pipes were not set up"));
        };
        Ok(Worker {
            child,
            stdin,
            stdout,
        })
    }
}

impl Drop for PoolInner {
    fn drop(&mut self) {
        let idle = std::mem::take(self.idle.get_mut().unwrap_or_else(PoisonError::into_inner));
        for worker in idle {
            stop(worker.child);
        }
    }
}

/// Runs one job in `worker` on this thread: forwards replies, relays events, enforces the
/// deadline, and reports how the worker ended.
fn drive(worker: Worker, job: Job) {
    let Worker {
        child,
        stdin,
        stdout,
    } = worker;
    let Job {
        request,
        mut emit,
        replies,
        cancel,
        finished,
    } = job;
    let limits = request.limits;
    let deadline = Instant::now() + limits.timeout + DEADLINE_GRACE;
    let child = Arc::new(Mutex::new(child));
    let mut stdin = BufWriter::new(stdin);
    if let Err(error) = send(&mut stdin, &ToWorker::Start(request)) {
        let status = wait(&child);
        let what = format!("it did not take the job: {error}");
        finished(failed(ended_early(status, limits.memory_bytes, &what)));
        return;
    }

    // Forward replies until the worker is done; kill it when it overstays.
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let watched = child.clone();
    let forwarder = std::thread::Builder::new()
        .name("toolweave-worker-replies".to_owned())
        .spawn(move || forward(stdin, &replies, &done_rx, &watched, &cancel, deadline));
    if let Err(error) = &forwarder {
        tracing::error!(%error, "cannot start a thread to forward replies to a worker");
    }

    let mut outcome = None;
    let mut lines = BufReader::new(stdout);
    let mut line = String::new();
    loop {
        line.clear();
        match lines.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        match serde_json::from_str::<FromWorker>(&line) {
            Ok(FromWorker::Event(event)) => emit(event),
            Ok(FromWorker::Finished(result)) => {
                outcome = Some(result);
                break;
            }
            Err(error) => {
                tracing::error!(%error, "a worker wrote something that is not a message");
                break;
            }
        }
    }
    let _ = done_tx.send(());
    if let Some(outcome) = outcome {
        // Answer first: the forwarder notices `done` at its next look, and the worker exits on
        // its own after its last message.
        finished(outcome);
        if let Ok(forwarder) = forwarder {
            let _ = forwarder.join();
        }
        let _ = wait(&child);
        return;
    }
    let killed = forwarder
        .ok()
        .and_then(|forwarder| forwarder.join().ok())
        .flatten();
    let status = wait(&child);
    finished(match killed {
        Some(Killed::Deadline) => failed(EngineError::Timeout {
            limit: limits.timeout,
        }),
        Some(Killed::Cancelled | Killed::HostGone) => failed(EngineError::Cancelled),
        None => failed(ended_early(
            status,
            limits.memory_bytes,
            "it ended before reporting an outcome",
        )),
    });
}

/// Why the host killed a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Killed {
    /// It ran past its deadline (and the grace after it).
    Deadline,
    /// It was cancelled and did not stop on its own.
    Cancelled,
    /// The execution's host side went away.
    HostGone,
}

/// Sends replies to the worker; kills it once it is past its deadline or ignores a cancel.
fn forward(
    mut stdin: BufWriter<ChildStdin>,
    replies: &mpsc::Receiver<HostReply>,
    done: &mpsc::Receiver<()>,
    child: &Mutex<Child>,
    cancel: &CancelFlag,
    deadline: Instant,
) -> Option<Killed> {
    let mut cancelled_at: Option<Instant> = None;
    loop {
        if done.try_recv().is_ok() {
            return None;
        }
        match replies.recv_timeout(WATCH_INTERVAL) {
            Ok(reply) => {
                if matches!(reply, HostReply::Cancel) {
                    cancelled_at.get_or_insert_with(Instant::now);
                }
                if send(&mut stdin, &ToWorker::Reply(reply)).is_err() {
                    // The worker is gone; the reader sees it too.
                    return None;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                // The host is gone: the worker must not outlive it.
                kill(child);
                return Some(Killed::HostGone);
            }
        }
        if cancel.is_cancelled() && cancelled_at.is_none() {
            cancelled_at = Some(Instant::now());
            let _ = send(&mut stdin, &ToWorker::Reply(HostReply::Cancel));
        }
        let now = Instant::now();
        if now >= deadline {
            kill(child);
            return Some(Killed::Deadline);
        }
        if cancelled_at.is_some_and(|at| now >= at + CANCEL_GRACE) {
            kill(child);
            return Some(Killed::Cancelled);
        }
    }
}

fn send(stdin: &mut BufWriter<ChildStdin>, message: &ToWorker) -> std::io::Result<()> {
    serde_json::to_writer(&mut *stdin, message)?;
    stdin.write_all(b"\n")?;
    stdin.flush()
}

fn kill(child: &Mutex<Child>) {
    let mut child = child.lock().unwrap_or_else(PoisonError::into_inner);
    let _ = child.kill();
}

fn wait(child: &Mutex<Child>) -> Option<ExitStatus> {
    child
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .wait()
        .ok()
}

fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Why a worker ended without an outcome, from its exit status.
fn ended_early(status: Option<ExitStatus>, memory_limit: usize, what: &str) -> EngineError {
    match status {
        Some(status) if status.code() == Some(MEMORY_EXIT_CODE) => EngineError::MemoryLimit {
            limit: memory_limit,
        },
        Some(status) => match status.signal() {
            Some(signal) => EngineError::Internal {
                message: format!(
                    "the worker process running the code was ended by signal {signal} ({}); {what}",
                    signal_name(signal)
                ),
            },
            None => EngineError::Internal {
                message: format!(
                    "the worker process running the code exited with {status}; {what}"
                ),
            },
        },
        None => EngineError::Internal {
            message: format!("the worker process running the code was lost; {what}"),
        },
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        6 => "SIGABRT",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        31 => "SIGSYS",
        _ => "a signal",
    }
}

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

/// The worker's side: prepare, take one job from stdin, run it, report, exit.
///
/// The binary must use `monty_alloc::LimitedAllocator` as its global allocator: before the guest
/// runs, the worker arms it with the job's memory limit, so that going past it ends this process
/// (exit status [`MEMORY_EXIT_CODE`]) rather than the machine's memory.
pub fn worker_main() -> ExitCode {
    let stack_top = stack_address();
    let prepared = Prepared::new(stack_top);
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = String::new();
    let request = match input.read_line(&mut line) {
        Ok(0) | Err(_) => return ExitCode::SUCCESS, // the pool was dropped before using us
        Ok(_) => match serde_json::from_str::<ToWorker>(&line) {
            Ok(ToWorker::Start(request)) => request,
            Ok(ToWorker::Reply(_)) | Err(_) => {
                eprintln!("toolweave worker: the first message was not a job");
                return ExitCode::FAILURE;
            }
        },
    };
    drop(input);

    let cancel = CancelFlag::new();
    let (replies_tx, replies_rx) = mpsc::channel();
    {
        let cancel = cancel.clone();
        // Replies arrive while the engine runs; this thread ends with the process.
        let _ = std::thread::Builder::new()
            .name("toolweave-worker-input".to_owned())
            .spawn(move || {
                let mut input = std::io::stdin().lock();
                let mut line = String::new();
                loop {
                    line.clear();
                    match input.read_line(&mut line) {
                        Ok(0) | Err(_) => {
                            // The host is gone: nothing will answer, stop.
                            cancel.cancel();
                            let _ = replies_tx.send(HostReply::Cancel);
                            return;
                        }
                        Ok(_) => {}
                    }
                    if let Ok(ToWorker::Reply(reply)) = serde_json::from_str(&line) {
                        if matches!(reply, HostReply::Cancel) {
                            cancel.cancel();
                        }
                        if replies_tx.send(reply).is_err() {
                            return;
                        }
                    }
                }
            });
    }

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
    arm_memory(&request);
    let outcome = match request.language {
        Language::JavaScript | Language::TypeScript => match prepared {
            Ok(prepared) => {
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
            Err(error) => failed(error),
        },
        Language::Python => crate::run(
            request,
            &mut |event| write(&FromWorker::Event(event)),
            &replies_rx,
            &cancel,
        ),
    };
    write(&FromWorker::Finished(outcome));
    ExitCode::SUCCESS
}
