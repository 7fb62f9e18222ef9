//! Engine threads that prepare their next runtime while they wait.
//!
//! Creating a QuickJS runtime and context and compiling the prelude is most of an execution's
//! cost, and none of it depends on the program (nor on the catalog: `tools` resolves names as
//! code uses them). So every engine thread, once it has handed back an outcome, drops the spent
//! runtime, prepares a fresh one, and only then waits for work: an execution that finds a
//! prepared thread starts on a ready runtime. Each runtime still serves one execution only, so
//! nothing leaks from one program to the next.
//!
//! Guest code blocks the thread it runs on, so every running execution has a thread of its own:
//! when no thread is idle, the pool starts another, and threads beyond the idle target exit after
//! their execution. When no thread can be started (the process is out of threads or address
//! space: each thread reserves its stack), the execution waits for the next thread that finishes
//! one, its deadline still running, instead of failing. Under a limit on the process's address
//! space (`RLIMIT_AS`), the pool does not wait for that failure: it starts no more threads than
//! half of the address space left when it was made holds, counting each thread's stack and its
//! guest's memory limit, and keeps the C allocator to a few arenas, so that the gateway's own
//! allocations always find room (one that fails ends the process).

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::alloc::stack_address;
use crate::javascript::{Prepared, Spent};
use crate::transpile::Compiler;
use crate::{
    CancelFlag, ENGINE_THREAD_HEADROOM, EngineError, EngineEvent, ExecuteRequest, HostReply,
    Language, Outcome, Stats,
};

/// One execution handed to a pool.
pub struct Job {
    /// What to run.
    pub request: ExecuteRequest,
    /// Receives the engine's events, in order, on a thread of the pool.
    pub emit: Box<dyn FnMut(EngineEvent) + Send>,
    /// Receives the outcome, once, on a thread of the pool.
    pub finished: Box<dyn FnOnce(Outcome) + Send>,
}

/// The host's hold on a running execution: it answers the guest's calls and can stop it.
pub struct ThreadExecution {
    reply: Box<dyn Fn(HostReply) + Send + Sync>,
    cancel: Box<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for ThreadExecution {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ThreadExecution")
            .finish_non_exhaustive()
    }
}

impl ThreadExecution {
    /// A hold built from how to deliver replies and how to stop.
    pub(crate) fn new(
        reply: impl Fn(HostReply) + Send + Sync + 'static,
        cancel: impl Fn() + Send + Sync + 'static,
    ) -> Self {
        Self {
            reply: Box::new(reply),
            cancel: Box::new(cancel),
        }
    }

    /// Delivers one answer to the guest. Answers arrive in the order they are given; an
    /// execution that has ended ignores them.
    pub fn reply(&self, reply: HostReply) {
        (self.reply)(reply);
    }

    /// Stops the execution: the guest is interrupted within milliseconds.
    pub fn cancel(&self) {
        (self.cancel)();
    }
}

/// Threads waiting for work, and work waiting for a thread.
#[derive(Debug, Default)]
struct Threads {
    /// Threads waiting for work.
    idle: Vec<Idle>,
    /// Executions for which no thread could be started, in the order they came.
    waiting: VecDeque<Task>,
    /// Threads alive (running or idle).
    alive: usize,
}

/// Counts a thread of the pool out when it ends, however it ends.
struct Alive<'a>(&'a Inner);

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        let mut threads = self
            .0
            .threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        threads.alive = threads.alive.saturating_sub(1);
    }
}

/// A thread waiting for work.
#[derive(Debug)]
struct Idle {
    jobs: Sender<Task>,
    /// Set once its runtime is prepared: a job it takes starts at once.
    ready: Arc<AtomicBool>,
}

/// What an engine thread gets: the job, and the host's side of its replies and cancel flag.
struct Task {
    job: Job,
    replies: Receiver<HostReply>,
    cancel: CancelFlag,
}

impl std::fmt::Debug for Task {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Task")
            .field("job", &self.job)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Job")
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}

/// Engine threads with prepared runtimes. Cheap to clone; threads exit when the pool is dropped.
#[derive(Debug, Clone)]
pub struct EnginePool {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The pool's threads, as far as they are shared.
    threads: Mutex<Threads>,
    /// How many threads stay waiting between executions.
    idle_target: usize,
    /// Stack of each engine thread.
    stack_size: usize,
    /// The most threads alive at once; more executions wait for one of them.
    max_threads: usize,
}

impl EnginePool {
    /// A pool that keeps `idle_target` threads ready, for guests whose stack limit is at most
    /// `guest_stack_bytes`. The first threads start preparing at once.
    pub fn new(idle_target: usize, guest_stack_bytes: usize) -> Self {
        Self::with_max_threads(idle_target, guest_stack_bytes, usize::MAX)
    }

    /// [`EnginePool::new`] with no more than `max_threads` (at least one) alive at once: further
    /// executions wait for a thread that finishes, their deadline running.
    pub fn with_max_threads(
        idle_target: usize,
        guest_stack_bytes: usize,
        max_threads: usize,
    ) -> Self {
        let max_threads = max_threads.max(1);
        let idle_target = idle_target.min(max_threads);
        let pool = Self {
            inner: Arc::new(Inner {
                threads: Mutex::new(Threads::default()),
                idle_target,
                stack_size: guest_stack_bytes.saturating_add(ENGINE_THREAD_HEADROOM),
                max_threads,
            }),
        };
        for _ in 0..idle_target {
            if let Err(error) = pool.spawn(None) {
                tracing::warn!(%error, "cannot start an engine thread ahead of time");
            }
        }
        pool
    }

    /// A pool for guests with `guest_stack_bytes` of stack and `guest_memory_bytes` of memory,
    /// with as many threads alive at once as the process's address space holds (see the module
    /// documentation); the number is logged when the address space is limited.
    pub fn within_address_space(
        idle_target: usize,
        guest_stack_bytes: usize,
        guest_memory_bytes: usize,
    ) -> Self {
        let per_thread = guest_stack_bytes
            .saturating_add(ENGINE_THREAD_HEADROOM)
            .saturating_add(guest_memory_bytes);
        let max_threads = match address_space_left() {
            Some(left) => {
                // Each arena reserves 64 MiB: under a limited address space that reserve
                // alone could crowd out the gateway's own allocations.
                crate::limit_malloc_arenas(4);
                // The thread that compiles programs reserves its own stack, whatever runs.
                let left = left.saturating_sub(crate::THREAD_STACK_HEADROOM);
                let max_threads = (left / 2 / per_thread.max(1)).max(1);
                tracing::info!(
                    address_space_left_mib = left >> 20,
                    max_threads,
                    "the address space is limited (RLIMIT_AS): at most this many executions run \
                     on engine threads at once; more wait for one, their deadline running"
                );
                max_threads
            }
            None => usize::MAX,
        };
        Self::with_max_threads(idle_target, guest_stack_bytes, max_threads)
    }

    /// Starts `job` on an idle thread, or on a new one when none is idle. The outcome always
    /// arrives through the job's `finished`, also when no thread could be started.
    pub fn submit(&self, job: Job) -> ThreadExecution {
        let (replies_tx, replies) = mpsc::channel();
        let cancel = CancelFlag::new();
        let execution = {
            let cancel = cancel.clone();
            let cancel_tx = replies_tx.clone();
            ThreadExecution::new(
                move |reply| {
                    // The engine is gone only when the execution ended.
                    let _ = replies_tx.send(reply);
                },
                move || {
                    cancel.cancel();
                    // Wakes an engine that waits for replies; the flag reaches a busy one.
                    let _ = cancel_tx.send(HostReply::Cancel);
                },
            )
        };
        let mut task = Task {
            job,
            replies,
            cancel,
        };
        loop {
            let mut threads = self.inner.lock_threads();
            let Some(worker) = take_idle(&mut threads) else {
                if threads.alive >= self.inner.max_threads {
                    // A thread that finishes its execution takes the first waiting one.
                    threads.waiting.push_back(task);
                    return execution;
                }
                break;
            };
            drop(threads);
            match worker.jobs.send(task) {
                Ok(()) => return execution,
                // That thread is gone (it panicked outside an execution); try the next.
                Err(mpsc::SendError(returned)) => task = returned,
            }
        }
        // With a task, `spawn` reports a failure through the job itself.
        let _ = self.spawn(Some(task));
        execution
    }

    /// Starts an engine thread, running `first` at once when given. When the thread cannot be
    /// started, `first` waits for a thread that finishes its execution, or, when no thread is
    /// alive (or one became idle meanwhile), goes to the idle one or is finished with the error.
    fn spawn(&self, first: Option<Task>) -> std::io::Result<()> {
        let (sender, jobs) = mpsc::channel();
        let inner = self.inner.clone();
        // The thread takes the job from this slot; if the thread cannot start, the job is still
        // here to be answered.
        let slot = Arc::new(Mutex::new(first));
        let taken = slot.clone();
        // Counted before the thread starts (and counted out by `Alive` when it ends, or below
        // when it cannot start), so the count never misses a thread that can take work.
        self.inner.lock_threads().alive += 1;
        let spawned = std::thread::Builder::new()
            .name("toolweave-engine".to_owned())
            .stack_size(self.inner.stack_size)
            .spawn(move || {
                let _alive = Alive(&inner);
                let first = taken.lock().unwrap_or_else(PoisonError::into_inner).take();
                serve(&inner, first, &jobs, &sender);
            });
        if let Err(error) = &spawned {
            self.inner.lock_threads().alive -= 1;
            let mut task = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
            while let Some(waiting) = task.take() {
                let mut threads = self.inner.lock_threads();
                if let Some(worker) = take_idle(&mut threads) {
                    drop(threads);
                    // That thread may be gone (it panicked outside an execution); try again.
                    if let Err(mpsc::SendError(returned)) = worker.jobs.send(waiting) {
                        task = Some(returned);
                    }
                } else if threads.alive > 0 {
                    tracing::debug!(
                        %error,
                        alive = threads.alive,
                        "no engine thread can be started; the execution waits for one"
                    );
                    threads.waiting.push_back(waiting);
                } else {
                    task = Some(waiting);
                    break;
                }
            }
            if let Some(task) = task {
                (task.job.finished)(failed(
                    EngineError::Internal {
                        message: format!("cannot start an engine thread: {error}"),
                    },
                    Instant::now(),
                ));
            }
        }
        spawned.map(drop)
    }
}

/// How long an engine thread waits after an execution before it tears the spent runtime down
/// and prepares the next, when another thread is prepared for the next job. Done at once, that
/// work ran on the core the gateway needed to send the answer: the scheduler often
/// woke the engine thread on the gateway's core and let it run on. When no other thread is
/// prepared, the next job would wait for it anyway, so it starts at once (back to back, with the
/// delay, each execution would spend its own time preparing its runtime).
const PREPARE_DELAY: Duration = Duration::from_millis(2);

impl Inner {
    fn lock_threads(&self) -> std::sync::MutexGuard<'_, Threads> {
        self.threads.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// How many bytes of address space this process may still map, when `RLIMIT_AS` limits it.
#[cfg(target_os = "linux")]
fn address_space_left() -> Option<usize> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    #[expect(unsafe_code, reason = "getrlimit writes only the struct it is given")]
    // SAFETY: `limit` is a valid, writable `rlimit` for the duration of the call.
    let read = unsafe { libc::getrlimit(libc::RLIMIT_AS, &raw mut limit) };
    if read != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    // The first field of statm is the process's mapped size, in pages.
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    #[expect(unsafe_code, reason = "sysconf reads a constant")]
    // SAFETY: sysconf takes no pointers.
    let page_size = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
    let left = limit
        .rlim_cur
        .saturating_sub(pages.saturating_mul(page_size));
    Some(usize::try_from(left).unwrap_or(usize::MAX))
}

/// Elsewhere no limit is read: threads start until the system refuses one.
#[cfg(not(target_os = "linux"))]
fn address_space_left() -> Option<usize> {
    None
}

/// An idle thread, a prepared one if there is one: another prepares on the job's time.
fn take_idle(threads: &mut Threads) -> Option<Idle> {
    let ready = threads
        .idle
        .iter()
        .rposition(|thread| thread.ready.load(Ordering::Acquire));
    match ready {
        Some(index) => Some(threads.idle.swap_remove(index)),
        None => threads.idle.pop(),
    }
}

/// An engine thread: (register as idle and) wait, prepare when idle, run, repeat.
fn serve(inner: &Inner, first: Option<Task>, tasks: &Receiver<Task>, me: &Sender<Task>) {
    let stack_top = stack_address();
    let ready = Arc::new(AtomicBool::new(false));
    let mut next = first;
    let mut prepared: Option<Result<Prepared, EngineError>> = None;
    let mut spent: Option<Spent> = None;
    loop {
        let task = match next.take() {
            Some(task) => task,
            None => {
                let others_ready = {
                    let mut threads = inner.lock_threads();
                    // An execution no thread could be started for goes first.
                    if let Some(task) = threads.waiting.pop_front() {
                        drop(threads);
                        ready.store(false, Ordering::Release);
                        drop(spent.take());
                        let runtime = prepared
                            .take()
                            .unwrap_or_else(|| Prepared::new(stack_top, Compiler::Shared));
                        (prepared, spent) = run_task(runtime, task);
                        continue;
                    }
                    if threads.idle.len() >= inner.idle_target {
                        return;
                    }
                    ready.store(prepared.is_some(), Ordering::Release);
                    threads.idle.push(Idle {
                        jobs: me.clone(),
                        ready: ready.clone(),
                    });
                    threads
                        .idle
                        .iter()
                        .any(|thread| thread.ready.load(Ordering::Acquire))
                };
                let waited = match &prepared {
                    Some(_) => tasks.recv().map_err(|_| RecvTimeoutError::Disconnected),
                    // Another thread is ready for the next job: prepare a moment later, off
                    // the core that is sending this execution's answer.
                    None if others_ready => tasks.recv_timeout(PREPARE_DELAY),
                    // None is: the next job would wait for a runtime, so prepare one now.
                    None => Err(RecvTimeoutError::Timeout),
                };
                match waited {
                    Ok(task) => task,
                    Err(RecvTimeoutError::Timeout) => {
                        drop(spent.take());
                        prepared = Some(Prepared::new(stack_top, Compiler::Shared));
                        ready.store(true, Ordering::Release);
                        match tasks.recv() {
                            Ok(task) => task,
                            Err(_) => return,
                        }
                    }
                    // The pool is gone.
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        };
        ready.store(false, Ordering::Release);
        drop(spent.take());
        let runtime = prepared
            .take()
            .unwrap_or_else(|| Prepared::new(stack_top, Compiler::Shared));
        (prepared, spent) = run_task(runtime, task);
    }
}

/// Runs one job on `prepared` (JavaScript) and hands its outcome back before anything is torn
/// down. Returns the prepared runtime when the job did not need it (Python), for the next job,
/// and the spent runtime, to be dropped later.
fn run_task(
    prepared: Result<Prepared, EngineError>,
    task: Task,
) -> (Option<Result<Prepared, EngineError>>, Option<Spent>) {
    let Task {
        job: Job {
            request,
            mut emit,
            finished,
        },
        replies,
        cancel,
    } = task;
    let started = Instant::now();
    let mut unused = None;
    let ran = catch_unwind(AssertUnwindSafe(|| match request.language {
        Language::JavaScript | Language::TypeScript => match prepared {
            Ok(prepared) => {
                let (outcome, spent) = prepared.execute(request, &mut *emit, &replies, &cancel);
                (outcome, Some(spent))
            }
            Err(error) => (failed(error, started), None),
        },
        Language::Python => {
            // A runtime that could not be prepared is prepared again for the next job.
            unused = prepared.ok().map(Ok);
            (
                crate::python::execute(request, &mut *emit, &replies, &cancel),
                None,
            )
        }
    }));
    let mut spent = None;
    match ran {
        Ok((outcome, ran_on)) => {
            finished(outcome);
            spent = ran_on;
        }
        Err(panic) => {
            let message = crate::panic_message(panic.as_ref());
            finished(failed(
                EngineError::Internal {
                    message: format!("the engine panicked: {message}"),
                },
                started,
            ));
        }
    }
    (unused, spent)
}

fn failed(error: EngineError, started: Instant) -> Outcome {
    Outcome {
        result: Err(error),
        stats: Stats {
            duration: started.elapsed(),
            ..Stats::default()
        },
    }
}
