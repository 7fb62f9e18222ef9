//! The host side of worker processes: started ahead of demand, driven by the execution's task.
//!
//! A worker is the `toolweave` binary started again as a worker ([`crate::worker_main`])
//! for one kind of program; it runs executions one after another, each in a fresh engine
//! runtime, until the host lets it go. This side keeps a few started per kind, hands one its
//! job, and then reads and writes the worker's pipes directly in the execution's task: an event
//! written by the worker wakes the protocol thread once, with no relay thread in between. The
//! host owns the deadline: a worker that does not stop when asked is killed.
//!
//! A worker that has run an execution serves only that execution's session ([`SessionKey`]):
//! it is kept for the session's next one when the execution ended cleanly, and otherwise, or
//! after [`MAX_KEPT_EXECUTIONS`] executions, [`MAX_KEPT_BUSY`] of them, or [`KEPT_FOR`] without
//! one, it ends and a fresh worker takes its place. No worker ever runs for two sessions.

use std::collections::HashMap;
use std::io;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use toolweave_jsonrpc::reader::{LineReader, Next, Overflow};
use toolweave_jsonrpc::tail::StderrTail;
use toolweave_sandbox::{
    EngineError, ExecuteRequest, ExpectedManifest, HostReply, Manifest, Outcome,
};

#[cfg(target_os = "linux")]
use crate::fork_client::{ForkServer, ForkedWorker};
use crate::{
    FromEngine, MEMORY_EXIT_CODE, ToWorker, WorkerCommand, WorkerJob, WorkerKind, WorkerSpec,
};

/// How long after its start a gateway fills its worker pools (see [`When::AfterStartup`]).
const STARTUP_DELAY: Duration = Duration::from_millis(50);
/// How long after an execution ends its replacement worker is started (see [`When::Soon`]).
const REPLACEMENT_DELAY: Duration = Duration::from_millis(2);
/// How long the host waits for the exit status of a worker that ended without an outcome.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// The most executions one worker runs for its session; then a fresh one takes its place.
pub const MAX_KEPT_EXECUTIONS: u32 = 1000;
/// The most time one worker spends in executions (from the job to its outcome). Its CPU ceiling
/// (`Ceilings::cpu_seconds`, the gateway's timeout and 3 s) counts the whole process, and an
/// execution uses at most its time in CPU (one engine thread): a worker let go past this
/// leaves every execution it runs at least the CPU its timeout allows.
pub const MAX_KEPT_BUSY: Duration = Duration::from_secs(2);
/// How long a kept worker waits for its session's next execution.
pub const KEPT_FOR: Duration = Duration::from_secs(30);
/// A JavaScript guest that held more heap than this leaves its worker's memory grown; the
/// worker is let go.
const MAX_KEPT_HEAP: usize = 32 * 1024 * 1024;
/// Kept workers of one session: as many as it had executions at once, up to this.
const MAX_KEPT_PER_SESSION: usize = 16;
/// Kept workers of all sessions together, per core of the machine; past it, the one kept
/// longest ends.
const MAX_KEPT_PER_CORE: usize = 16;
/// How often kept workers are checked for having waited too long.
const KEPT_SWEEP: Duration = Duration::from_secs(5);

/// The session an execution runs for: a worker that ran one of its executions runs no other
/// session's. `session` is unique within the gateway process (`SessionState`'s number); the
/// identity is part of the key, so one session's executions for two identities do not share.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionKey {
    /// Which session of this process.
    pub session: u64,
    /// The identity the execution runs for, when the client named one.
    pub identity: Option<Arc<str>>,
}

/// Worker processes of one kind, started ahead of demand. Cheap to clone.
#[derive(Debug, Clone)]
pub struct WorkerPool {
    inner: Arc<PoolInner>,
}

#[derive(Debug)]
struct PoolInner {
    command: WorkerCommand,
    spec: WorkerSpec,
    /// An empty directory the workers start in.
    directory: PathBuf,
    idle: Mutex<Idle>,
    idle_target: usize,
    /// Workers kept for the next execution of the session they ran one for.
    kept: Mutex<Kept>,
    /// Whether workers are kept for their session at all.
    keeps: bool,
    /// How many are kept for all sessions together: [`MAX_KEPT_PER_CORE`] for each core.
    max_kept: usize,
    /// Workers running an execution (for metrics).
    busy: std::sync::atomic::AtomicUsize,
    /// The manifest of the last job: workers started from now on are told to expect it.
    expected: ExpectedManifest,
    /// Where workers come from: a fork server when one runs, otherwise a new process each.
    #[cfg(target_os = "linux")]
    forks: tokio::sync::Mutex<Forks>,
}

/// The workers waiting for a job, and how many more are being started to wait.
#[derive(Debug, Default)]
struct Idle {
    workers: Vec<Worker>,
    starting: usize,
}

/// Workers that ran an execution, kept for their session's next.
#[derive(Debug, Default)]
struct Kept {
    by_session: HashMap<SessionKey, Vec<KeptWorker>>,
    count: usize,
    /// Whether the task that lets workers go after [`KEPT_FOR`] runs.
    sweeping: bool,
}

#[derive(Debug)]
struct KeptWorker {
    worker: Worker,
    uses: Uses,
    since: Instant,
}

/// What a worker has run so far.
#[derive(Debug, Clone, Copy, Default)]
struct Uses {
    executions: u32,
    busy: Duration,
}

impl Uses {
    /// Whether a worker that has run this much may run another execution.
    fn leave_room(&self) -> bool {
        self.executions < MAX_KEPT_EXECUTIONS && self.busy < MAX_KEPT_BUSY
    }
}

/// When a pool starts the workers it is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum When {
    /// At once: nothing is waiting.
    Now,
    /// Once the gateway has started: its first moments are busy (upstream servers starting,
    /// the fork servers warming up, the first worker of each kind starting), and the first
    /// execution needs one worker, not a full pool.
    AfterStartup,
    /// A moment later: the execution that freed a place is still being answered, and starting
    /// a worker costs a core for a while (started at once, the replacement slows the answer
    /// of paced executions; see docs/benchmarks.md).
    Soon,
}

/// The pool's fork server.
#[cfg(target_os = "linux")]
#[derive(Debug)]
enum Forks {
    /// Started with the first worker.
    NotStarted,
    Running(Arc<ForkServer>),
    /// It could not start, or it ended: workers start as processes of their own.
    Unavailable,
}

/// A started worker: the process and its pipes.
#[derive(Debug)]
struct Worker {
    /// The manifest it was told to expect: a job with it need not carry it.
    expects: Option<Arc<Manifest>>,
    process: Process,
    stdin: pipe::Sender,
    stdout: MessageReader,
    stderr: Stderr,
}

/// A worker's process: a child of the gateway, or of the fork server.
#[derive(Debug)]
enum Process {
    Started(Child),
    #[cfg(target_os = "linux")]
    Forked(Forked),
}

/// A worker forked by the fork server; killed when dropped.
#[cfg(target_os = "linux")]
#[derive(Debug)]
struct Forked {
    worker: ForkedWorker,
    status: Option<ExitStatus>,
}

impl Process {
    fn id(&self) -> Option<u32> {
        match self {
            Self::Started(child) => child.id(),
            #[cfg(target_os = "linux")]
            Self::Forked(forked) => Some(forked.worker.pid),
        }
    }

    /// Sends SIGKILL; a process that has ended already is no error.
    fn start_kill(&mut self) {
        match self {
            Self::Started(child) => {
                let _ = child.start_kill();
            }
            #[cfg(target_os = "linux")]
            Self::Forked(forked) => forked.kill(),
        }
    }

    /// Whether the process is known to be unable to take a job: a forked worker that has ended,
    /// or whose fork server has (the fork server's workers die with it, a moment later).
    fn is_lost(&mut self) -> bool {
        match self {
            Self::Started(_) => false,
            #[cfg(target_os = "linux")]
            Self::Forked(forked) => {
                use tokio::sync::oneshot::error::TryRecvError;
                match forked.worker.ended.try_recv() {
                    Ok(status) => {
                        forked.status = Some(status);
                        true
                    }
                    Err(TryRecvError::Closed) => true,
                    Err(TryRecvError::Empty) => false,
                }
            }
        }
    }

    /// How the process ended, once it has.
    async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self {
            Self::Started(child) => child.wait().await,
            #[cfg(target_os = "linux")]
            Self::Forked(forked) => {
                if let Some(status) = forked.status {
                    return Ok(status);
                }
                let status = (&mut forked.worker.ended).await.map_err(|_| {
                    io::Error::other("its fork server ended before it could report the status")
                })?;
                forked.status = Some(status);
                Ok(status)
            }
        }
    }
}

#[cfg(target_os = "linux")]
impl Forked {
    fn kill(&self) {
        if self.status.is_none() {
            use std::os::fd::AsFd;
            let _ = crate::fork_server::kill(self.worker.pidfd.as_fd());
        }
    }
}

#[cfg(target_os = "linux")]
impl Drop for Forked {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What a worker writes to stderr goes to the gateway's log; the last of it is kept for the error
/// of a worker that dies. (A worker may not write to files, so it cannot share the gateway's
/// stderr, which may be one.) However much it writes, what is held is bounded: a line, the tail,
/// and a read.
#[derive(Debug)]
struct Stderr {
    tail: StderrTail,
    reader: tokio::task::JoinHandle<()>,
}

/// How much of a worker's stderr is kept for its error.
const STDERR_TAIL_BYTES: usize = 2048;
/// How much of one worker's stderr goes to the gateway's log; the rest reaches only its tail.
const STDERR_LOGGED_BYTES: usize = 64 * 1024;

impl Stderr {
    fn follow(stderr: impl AsyncRead + Send + Unpin + 'static, pid: Option<u32>) -> Self {
        let tail = StderrTail::last_bytes(STDERR_TAIL_BYTES);
        let kept = tail.clone();
        let reader = tokio::spawn(async move {
            let mut logged = 0usize;
            crate::for_each_stderr_line(stderr, |line| {
                if logged < STDERR_LOGGED_BYTES {
                    logged += line.len();
                    tracing::warn!(worker = pid, "{line}");
                    if logged >= STDERR_LOGGED_BYTES {
                        tracing::warn!(
                            worker = pid,
                            "the worker wrote more than {STDERR_LOGGED_BYTES} bytes to stderr; \
                             the rest is not logged"
                        );
                    }
                }
                kept.push(line);
            })
            .await;
        });
        Self { tail, reader }
    }

    /// The last lines, once the worker's stderr is closed (or shortly after it ended).
    async fn last_words(&mut self) -> String {
        let _ = tokio::time::timeout(Duration::from_millis(200), &mut self.reader).await;
        self.tail.text().trim().to_owned()
    }
}

/// A worker's stdout, read one message at a time, none longer than its job's limits allow
/// (`FromEngine::max_line`).
#[derive(Debug)]
struct MessageReader {
    lines: LineReader<BufReader<pipe::Receiver>>,
}

/// Why what a worker wrote is not a message.
#[derive(Debug)]
enum Unreadable {
    /// A line longer than a worker under the job's limits writes.
    TooLong { max: usize },
    /// Text that does not parse as a message.
    Garbled(String),
}

impl MessageReader {
    /// Until a job is handed to its worker, the reader takes no line at all: a waiting worker
    /// writes nothing.
    fn new(stdout: pipe::Receiver) -> Self {
        Self {
            // Events are small: what goes a long way goes to the worker, not from it.
            lines: LineReader::new(stdout, 0, Overflow::Fail),
        }
    }

    /// From now on, lines of at most `max_line` bytes: what a worker under the job's limits
    /// writes.
    fn set_max_line(&mut self, max_line: usize) {
        self.lines.set_max(max_line);
    }

    /// The next line, without its end; `None` once the output ends (a line the worker did not
    /// finish is not a message: it died writing it). Each byte is looked at once, and a line
    /// is refused as soon as it is longer than allowed. Cancel safe: what was read stays.
    async fn next_line(&mut self) -> Result<Option<Vec<u8>>, Unreadable> {
        match self.lines.next().await {
            Ok(Next::Line) => Ok(Some(self.lines.take_line())),
            Ok(Next::TooLong { .. }) => Err(Unreadable::TooLong {
                max: self.lines.max(),
            }),
            // Its output ended, or cannot be read further.
            Ok(Next::Unfinished | Next::End) | Err(_) => Ok(None),
        }
    }
}

/// The three pipes of a worker: the ends the worker gets (its stdin, stdout, stderr) and the
/// gateway's.
struct Pipes {
    worker: [OwnedFd; 3],
    stdin: io::PipeWriter,
    stdout: io::PipeReader,
    stderr: io::PipeReader,
}

impl Pipes {
    fn new() -> io::Result<Self> {
        let (stdin_reader, stdin) = io::pipe()?;
        let (stdout, stdout_writer) = io::pipe()?;
        let (stderr, stderr_writer) = io::pipe()?;
        Ok(Self {
            worker: [
                stdin_reader.into(),
                stdout_writer.into(),
                stderr_writer.into(),
            ],
            stdin,
            stdout,
            stderr,
        })
    }

    /// The worker, once its process holds its ends.
    fn connect(
        stdin: io::PipeWriter,
        stdout: io::PipeReader,
        stderr: io::PipeReader,
        process: Process,
    ) -> io::Result<Worker> {
        let stderr = Stderr::follow(pipe::Receiver::from_owned_fd(stderr.into())?, process.id());
        Ok(Worker {
            expects: None,
            stdin: pipe::Sender::from_owned_fd(stdin.into())?,
            stdout: MessageReader::new(pipe::Receiver::from_owned_fd(stdout.into())?),
            stderr,
            process,
        })
    }
}

impl WorkerPool {
    /// A pool of `kind` workers keeping `idle_target` started, in the background: the first at
    /// once if `first_at_once`, the rest once the gateway has started; with `keep_for_sessions`,
    /// a worker is kept for its session's next execution. Must be called within the tokio
    /// runtime.
    pub fn new(
        command: WorkerCommand,
        spec: WorkerSpec,
        directory: PathBuf,
        idle_target: usize,
        first_at_once: bool,
        keep_for_sessions: bool,
    ) -> Self {
        let mut pool = Self::with_fork_server(command, spec, directory, idle_target, true);
        // Always: the pool was made just now and is not shared yet.
        if let Some(inner) = Arc::get_mut(&mut pool.inner) {
            inner.keeps = keep_for_sessions;
        }
        if first_at_once {
            pool.replenish_to(1, When::Now);
        }
        pool.replenish(When::AfterStartup);
        pool
    }

    /// A pool that starts no worker ahead by itself (see [`Self::new`]), and every worker as a
    /// process of its own when `fork_server` is false.
    pub fn with_fork_server(
        command: WorkerCommand,
        spec: WorkerSpec,
        directory: PathBuf,
        idle_target: usize,
        fork_server: bool,
    ) -> Self {
        #[cfg(not(target_os = "linux"))]
        let _ = fork_server;
        Self {
            inner: Arc::new(PoolInner {
                command,
                spec,
                directory,
                idle: Mutex::new(Idle::default()),
                idle_target,
                kept: Mutex::new(Kept::default()),
                keeps: true,
                max_kept: std::thread::available_parallelism()
                    .map_or(1, std::num::NonZeroUsize::get)
                    .saturating_mul(MAX_KEPT_PER_CORE),
                busy: std::sync::atomic::AtomicUsize::new(0),
                expected: ExpectedManifest::default(),
                #[cfg(target_os = "linux")]
                forks: tokio::sync::Mutex::new(if fork_server {
                    Forks::NotStarted
                } else {
                    Forks::Unavailable
                }),
            }),
        }
    }

    /// Workers started from now on are told to expect `manifest` (until a job names another).
    pub fn expect(&self, manifest: Arc<Manifest>) {
        self.inner.expected.set(manifest);
    }

    /// Starts `request` in a worker: one kept for `session`, a waiting one, or one started
    /// now. A waiting worker that cannot take the job (it died while it waited: killed, or its
    /// fork server went) is dropped for the next. With a `session`, the worker is kept for the
    /// session's next execution when this one ends cleanly.
    pub async fn start(
        &self,
        request: &ExecuteRequest,
        session: Option<SessionKey>,
    ) -> Result<WorkerExecution, String> {
        self.expect(request.manifest.clone());
        let session = session.filter(|_| self.inner.keeps);
        if let Some(key) = &session {
            while let Some(kept) = self.inner.take_kept(key) {
                if let Ok(execution) = self.hand(kept.worker, kept.uses, request, &session).await {
                    return Ok(execution);
                }
            }
        }
        loop {
            let (idle, emptied) = {
                let mut idle = self
                    .inner
                    .idle
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                let worker = idle.workers.pop();
                (worker, idle.workers.is_empty())
            };
            if emptied {
                // The next execution should find one waiting.
                self.replenish(When::Now);
            }
            let Some(worker) = idle else {
                let worker = self
                    .inner
                    .start_worker(Warm::No)
                    .await
                    .map_err(|error| format!("cannot start a worker process: {error}"))?;
                return self
                    .hand(worker, Uses::default(), request, &session)
                    .await
                    .map_err(|error| format!("the worker process did not take the job: {error}"));
            };
            if let Ok(execution) = self.hand(worker, Uses::default(), request, &session).await {
                return Ok(execution);
            }
        }
    }

    /// Hands `request` to `worker`, which has run `uses` before. A worker whose process has
    /// ended, or whose fork server has, is not sent the job: sending it would succeed (its
    /// pipe is still open) and lose the execution when it dies.
    async fn hand(
        &self,
        mut worker: Worker,
        uses: Uses,
        request: &ExecuteRequest,
        session: &Option<SessionKey>,
    ) -> io::Result<WorkerExecution> {
        if worker.process.is_lost() {
            tracing::debug!(
                worker = worker.process.id(),
                "a waiting worker process has ended, or its fork server has; trying another"
            );
            return Err(io::Error::other("the worker process has ended"));
        }
        let job = ToWorker::Start(WorkerJob::new(request, worker.expects.as_ref()));
        worker
            .stdout
            .set_max_line(FromEngine::max_line(&request.limits));
        // The worker expects the job's tools from now on.
        worker.expects = Some(request.manifest.clone());
        // Busy until the execution is dropped (which counts it down).
        self.inner.busy.fetch_add(1, Ordering::Relaxed);
        let mut execution = WorkerExecution {
            worker: Some(worker),
            memory_limit: request.limits.memory_bytes,
            killed: false,
            finished: None,
            unwritten: Outbox::default(),
            unreadable: None,
            pool: Some(self.clone()),
            session: session.clone(),
            uses,
            started: Instant::now(),
        };
        match execution.send(&job).await {
            Ok(()) => Ok(execution),
            Err(error) => {
                tracing::warn!(%error, "a waiting worker process was gone; trying another");
                execution.kill();
                Err(error)
            }
        }
    }

    /// The kind of worker this pool starts.
    pub fn kind(&self) -> WorkerKind {
        self.inner.spec.kind
    }

    /// How many of this pool's workers wait for a job of any session, wait for their session's
    /// next, and run one.
    pub fn count(&self) -> (usize, usize, usize) {
        let fresh = self
            .inner
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .workers
            .len();
        let kept = self
            .inner
            .kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .count;
        (fresh, kept, self.inner.busy.load(Ordering::Relaxed))
    }

    /// Starts workers in the background until `idle_target` are waiting (or being started).
    fn replenish(&self, when: When) {
        self.replenish_to(self.inner.idle_target, when);
    }

    /// Starts workers in the background until `target` are waiting (or being started).
    fn replenish_to(&self, target: usize, when: When) {
        let missing = {
            let mut idle = self
                .inner
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let missing = target.saturating_sub(idle.workers.len() + idle.starting);
            idle.starting += missing;
            missing
        };
        if missing == 0 {
            return;
        }
        let inner = self.inner.clone();
        tokio::spawn(async move {
            match when {
                When::Now => {}
                When::AfterStartup => tokio::time::sleep(STARTUP_DELAY).await,
                When::Soon => tokio::time::sleep(REPLACEMENT_DELAY).await,
            }
            for started in 0..missing {
                let worker = match inner.start_worker(Warm::Yes).await {
                    Ok(worker) => inner.tell_expected(worker).await,
                    Err(error) => Err(error),
                };
                let mut idle = inner.idle.lock().unwrap_or_else(PoisonError::into_inner);
                match worker {
                    Ok(worker) => {
                        idle.starting -= 1;
                        idle.workers.push(worker);
                    }
                    Err(error) => {
                        idle.starting -= missing - started;
                        tracing::warn!(%error, "cannot start a worker process ahead of time");
                        return;
                    }
                }
            }
        });
    }
}

impl Kept {
    /// Takes the worker kept longest.
    fn take_oldest(&mut self) -> Option<Worker> {
        let (session, index) = self
            .by_session
            .iter()
            .flat_map(|(session, workers)| {
                workers
                    .iter()
                    .enumerate()
                    .map(move |(index, kept)| (kept.since, session, index))
            })
            .min_by_key(|(since, _, _)| *since)
            .map(|(_, session, index)| (session.clone(), index))?;
        let workers = self.by_session.get_mut(&session)?;
        let kept = workers.remove(index);
        if workers.is_empty() {
            self.by_session.remove(&session);
        }
        self.count -= 1;
        Some(kept.worker)
    }

    /// Takes the workers kept for longer than [`KEPT_FOR`].
    fn take_expired(&mut self, now: Instant) -> Vec<Worker> {
        let mut expired = Vec::new();
        self.by_session.retain(|_, workers| {
            let (stale, fresh): (Vec<_>, Vec<_>) = std::mem::take(workers)
                .into_iter()
                .partition(|kept| now.duration_since(kept.since) >= KEPT_FOR);
            expired.extend(stale.into_iter().map(|kept| kept.worker));
            *workers = fresh;
            !workers.is_empty()
        });
        self.count -= expired.len();
        expired
    }
}

/// Lets kept workers go once they have waited [`KEPT_FOR`]; ends when none is kept, or with
/// the pool. Dropping a worker ends its process (it is reaped in the background).
async fn sweep_kept(pool: Weak<PoolInner>) {
    loop {
        tokio::time::sleep(KEPT_SWEEP).await;
        let Some(pool) = pool.upgrade() else { return };
        let (expired, done) = {
            let mut kept = pool.kept.lock().unwrap_or_else(PoisonError::into_inner);
            let expired = kept.take_expired(Instant::now());
            let done = kept.count == 0;
            if done {
                kept.sweeping = false;
            }
            (expired, done)
        };
        drop(expired);
        if done {
            return;
        }
    }
}

/// Whether a new worker warms up before it reads its job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Warm {
    /// Yes: it will wait for a job anyway.
    Yes,
    /// No: its job is waiting for it.
    No,
}

impl PoolInner {
    /// A worker kept for `session`, the one that waited least (its caches are warmest).
    fn take_kept(&self, session: &SessionKey) -> Option<KeptWorker> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let workers = kept.by_session.get_mut(session)?;
        let worker = workers.pop();
        if workers.is_empty() {
            kept.by_session.remove(session);
        }
        if worker.is_some() {
            kept.count -= 1;
        }
        worker
    }

    /// Keeps `worker`, which has run `uses` for `session`, for the session's next execution.
    /// What is let go to make room is returned, to be dropped (which ends it) outside the lock.
    fn keep(self: &Arc<Self>, session: SessionKey, worker: Worker, uses: Uses) -> Vec<Worker> {
        let mut gone = Vec::new();
        let start_sweep = {
            let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
            let of_session = kept.by_session.get(&session).map_or(0, Vec::len);
            if of_session >= MAX_KEPT_PER_SESSION {
                gone.push(worker);
                return gone;
            }
            if kept.count >= self.max_kept
                && let Some(oldest) = kept.take_oldest()
            {
                gone.push(oldest);
            }
            kept.by_session
                .entry(session)
                .or_default()
                .push(KeptWorker {
                    worker,
                    uses,
                    since: Instant::now(),
                });
            kept.count += 1;
            !std::mem::replace(&mut kept.sweeping, true)
        };
        if start_sweep {
            tokio::spawn(sweep_kept(Arc::downgrade(self)));
        }
        gone
    }

    /// Tells a waiting worker which tools its job will most likely name, unless it was forked
    /// expecting them.
    async fn tell_expected(&self, mut worker: Worker) -> io::Result<Worker> {
        if let Some(manifest) = self.expected.get()
            && !worker
                .expects
                .as_ref()
                .is_some_and(|expects| Arc::ptr_eq(expects, &manifest))
        {
            write_message(&mut worker.stdin, &ToWorker::Expect(manifest.clone())).await?;
            worker.expects = Some(manifest);
        }
        Ok(worker)
    }

    async fn start_worker(&self, warm: Warm) -> io::Result<Worker> {
        #[cfg(target_os = "linux")]
        if let Some(server) = self.fork_server().await {
            let pipes = Pipes::new()?;
            let expected = self.expected.get();
            match server
                .fork(pipes.worker, warm == Warm::Yes, expected.as_ref())
                .await
            {
                Ok(mut worker) => {
                    let expects = worker.expects.take();
                    let process = Process::Forked(Forked {
                        worker,
                        status: None,
                    });
                    let mut worker =
                        Pipes::connect(pipes.stdin, pipes.stdout, pipes.stderr, process)?;
                    worker.expects = expects;
                    return Ok(worker);
                }
                Err(error) => self.fork_server_failed(&server, &error).await,
            }
        }
        let pipes = Pipes::new()?;
        let mut command = Command::new(&self.command.program);
        let [stdin, stdout, stderr] = pipes.worker;
        command
            .args(&self.command.args)
            .args(self.spec.arguments())
            .env_clear()
            .envs(self.command.env.iter().map(|(key, value)| (key, value)))
            .current_dir(&self.directory)
            .stdin(Stdio::from(stdin))
            .stdout(Stdio::from(stdout))
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true);
        // Starting a process blocks until it has executed the binary: off the protocol thread.
        let child = tokio::task::spawn_blocking(move || command.spawn())
            .await
            .map_err(io::Error::other)??;
        Pipes::connect(
            pipes.stdin,
            pipes.stdout,
            pipes.stderr,
            Process::Started(child),
        )
    }

    /// The fork server, started now if it has not been.
    #[cfg(target_os = "linux")]
    async fn fork_server(&self) -> Option<Arc<ForkServer>> {
        let mut forks = self.forks.lock().await;
        match &*forks {
            Forks::Running(server) => Some(server.clone()),
            Forks::Unavailable => None,
            Forks::NotStarted => {
                let (command, spec, directory) =
                    (self.command.clone(), self.spec, self.directory.clone());
                // Starting a process blocks until it has executed the binary: off the
                // protocol threads, so that the pools of both kinds start side by side.
                let started = tokio::task::spawn_blocking(move || {
                    ForkServer::start(&command, &spec, &directory)
                })
                .await
                .map_err(io::Error::other)
                .and_then(|started| started);
                match started {
                    Ok(server) => {
                        let server = Arc::new(server);
                        *forks = Forks::Running(server.clone());
                        Some(server)
                    }
                    Err(error) => {
                        tracing::warn!(
                            %error,
                            "cannot start the worker fork server; each worker starts as a new \
                             process instead (slower)"
                        );
                        *forks = Forks::Unavailable;
                        None
                    }
                }
            }
        }
    }

    /// After a failed fork: a fork server that is gone is not asked again.
    #[cfg(target_os = "linux")]
    async fn fork_server_failed(&self, server: &Arc<ForkServer>, error: &io::Error) {
        let mut forks = self.forks.lock().await;
        if server.is_gone() {
            if matches!(&*forks, Forks::Running(current) if Arc::ptr_eq(current, server)) {
                tracing::warn!(
                    %error,
                    "the worker fork server ended; each worker starts as a new process from now \
                     on (slower)"
                );
                *forks = Forks::Unavailable;
            }
        } else {
            tracing::warn!(%error, "the worker fork server could not fork a worker; starting one directly");
        }
    }
}

/// One execution in a worker process, driven by the execution's task.
#[derive(Debug)]
pub struct WorkerExecution {
    /// Its worker; taken when the execution is dropped, to be kept for the session or ended.
    worker: Option<Worker>,
    memory_limit: usize,
    killed: bool,
    /// How its outcome left the worker, once it reported one.
    finished: Option<Finish>,
    /// Replies the worker's stdin had no room for yet: written while its output is read (see
    /// [`Self::next`]).
    unwritten: Outbox,
    /// Why a message from the worker could not be read, if one could not.
    unreadable: Option<Unreadable>,
    /// Told when this worker is done, to keep it or to start its replacement then (not while
    /// it runs: starting a process costs a core for a millisecond or two).
    pool: Option<WorkerPool>,
    /// The session the worker may be kept for.
    session: Option<SessionKey>,
    /// What the worker ran before this execution.
    uses: Uses,
    started: Instant,
}

/// How an execution's outcome leaves its worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finish {
    /// As it found it: the program ended on its own, within every limit, and its runtime goes
    /// with it. The worker can run the session's next execution.
    Clean,
    /// Past a limit, stopped, or failing in the engine itself: the worker ends.
    Spent,
}

impl Finish {
    fn of(outcome: &Outcome) -> Self {
        let clean = outcome.stats.memory_peak_bytes <= MAX_KEPT_HEAP
            && match &outcome.result {
                Ok(_) => true,
                Err(error) => matches!(
                    error,
                    EngineError::Syntax { .. }
                        | EngineError::CodeTooLarge { .. }
                        | EngineError::Guest { .. }
                        | EngineError::LogLimit { .. }
                        | EngineError::ResultTooLarge { .. }
                        | EngineError::Unserializable { .. }
                        | EngineError::ToolCallLimit { .. }
                        | EngineError::TimerLimit { .. }
                        | EngineError::NeverSettles
                ),
            };
        if clean { Self::Clean } else { Self::Spent }
    }
}

impl WorkerExecution {
    /// The worker's next message; `None` once it ended without an outcome. Cancel safe.
    ///
    /// Replies that did not fit in the worker's stdin are written meanwhile: the worker reads
    /// its stdin only between writing its events, so the host must never wait to write while
    /// the worker waits for it to read.
    pub async fn next(&mut self) -> Option<FromEngine> {
        let worker = self.worker.as_mut()?;
        let line = loop {
            if self.unwritten.is_empty() {
                break worker.stdout.next_line().await;
            }
            tokio::select! {
                line = worker.stdout.next_line() => break line,
                writable = worker.stdin.writable() => {
                    if writable.is_err() || write_some(&worker.stdin, &mut self.unwritten).is_err() {
                        // The worker is gone: what it wrote before is still read, then `None`.
                        self.unwritten.clear();
                    }
                }
            }
        };
        let unreadable = match line {
            Ok(Some(line)) => match serde_json::from_slice(&line) {
                Ok(message) => {
                    if let FromEngine::Finished(outcome) = &message {
                        self.finished = Some(Finish::of(outcome));
                    }
                    return Some(message);
                }
                Err(error) => Unreadable::Garbled(error.to_string()),
            },
            Ok(None) => return None,
            Err(unreadable) => unreadable,
        };
        tracing::error!(
            ?unreadable,
            "a worker wrote something that is not a message; stopping it"
        );
        self.unreadable = Some(unreadable);
        self.kill();
        None
    }

    /// Delivers one reply to the guest; a worker that is gone is reported by [`Self::next`].
    /// A `large` one (a megabyte or more as JSON) is written out as a line on the blocking pool.
    pub async fn reply(&mut self, reply: HostReply, large: bool) {
        let message = ToWorker::Reply(reply);
        if large {
            // Writing tens of megabytes as JSON would hold up every other execution here.
            match tokio::task::spawn_blocking(move || Outbox::line(&message)).await {
                Ok(line) => self.unwritten.push_line(line),
                Err(error) => tracing::error!(%error, "a reply to a worker was lost"),
            }
        } else {
            self.unwritten.push(&message);
        }
        let written = match &self.worker {
            Some(worker) => write_some(&worker.stdin, &mut self.unwritten),
            None => Err(io::Error::other("the worker is gone")),
        };
        if written.is_err() {
            self.unwritten.clear();
        }
    }

    /// Stops the execution: the worker is killed. A guest that is busy computing reads nothing
    /// the host sends, so there is nothing to wait for.
    pub fn cancel(&mut self) {
        self.kill();
    }

    /// Kills the worker now.
    pub fn kill(&mut self) {
        self.killed = true;
        if let Some(worker) = &mut self.worker {
            worker.process.start_kill();
        }
    }

    /// Why the worker ended without an outcome, from its exit status.
    pub async fn ended_early(&mut self) -> EngineError {
        if let Some(unreadable) = &self.unreadable {
            let what = match unreadable {
                Unreadable::Garbled(error) => {
                    format!("sent a message the gateway could not read ({error})")
                }
                Unreadable::TooLong { max } => format!(
                    "wrote a message longer than {max} bytes, more than a program under these \
                     limits can send"
                ),
            };
            return EngineError::Internal {
                message: format!("the worker process running the code {what}; it was stopped"),
            };
        }
        if self.killed {
            return EngineError::Cancelled;
        }
        let Some(worker) = &mut self.worker else {
            return EngineError::Internal {
                message: "the worker process running the code is gone".to_owned(),
            };
        };
        let status = match tokio::time::timeout(EXIT_WAIT, worker.process.wait()).await {
            Ok(Ok(status)) => status,
            _ => {
                return EngineError::Internal {
                    message: "the worker process running the code stopped answering".to_owned(),
                };
            }
        };
        if status.code() == Some(MEMORY_EXIT_CODE) {
            return EngineError::MemoryLimit {
                limit: self.memory_limit,
            };
        }
        use std::os::unix::process::ExitStatusExt;
        let mut message = match status.signal() {
            Some(signal) => format!(
                "the worker process running the code was ended by signal {signal} ({}) before it reported an outcome",
                signal_name(signal)
            ),
            None => format!(
                "the worker process running the code exited with {status} before it reported an outcome"
            ),
        };
        let last_words = worker.stderr.last_words().await;
        if !last_words.is_empty() {
            message.push_str(&format!("; it wrote: {last_words}"));
        }
        EngineError::Internal { message }
    }

    async fn send(&mut self, message: &ToWorker) -> std::io::Result<()> {
        match &mut self.worker {
            Some(worker) => write_message(&mut worker.stdin, message).await,
            None => Err(io::Error::other("the worker is gone")),
        }
    }

    /// The worker, if it may run its session's next execution: its outcome left it clean,
    /// everything sent to it was written, and it has room for more.
    fn keepable(&mut self) -> Option<(SessionKey, Worker, Uses)> {
        let uses = Uses {
            executions: self.uses.executions.saturating_add(1),
            busy: self.uses.busy.saturating_add(self.started.elapsed()),
        };
        let clean = self.finished == Some(Finish::Clean)
            && !self.killed
            && self.unreadable.is_none()
            && self.unwritten.is_empty()
            && uses.leave_room();
        if !clean {
            return None;
        }
        let session = self.session.take()?;
        let worker = self.worker.take()?;
        Some((session, worker, uses))
    }
}

/// Writes what `stdin` has room for now of `unwritten`, without waiting.
fn write_some(stdin: &pipe::Sender, unwritten: &mut Outbox) -> io::Result<()> {
    while !unwritten.is_empty() {
        match stdin.try_write(unwritten.bytes()) {
            Ok(written) => unwritten.advance(written),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Lines on their way to a worker's stdin, written as it has room: a long reply takes many
/// writes, and what is written is counted, not moved out of the way.
#[derive(Debug, Default)]
struct Outbox {
    lines: Vec<u8>,
    written: usize,
}

/// A buffer that grew this large for a long reply is let go once it is written.
const KEPT_OUTBOX_CAPACITY: usize = 256 * 1024;

impl Outbox {
    fn is_empty(&self) -> bool {
        self.written == self.lines.len()
    }

    /// Adds `message` as a line.
    fn push(&mut self, message: &ToWorker) {
        write_line(&mut self.lines, message);
    }

    /// `message` as a line, made apart from any outbox.
    fn line(message: &ToWorker) -> Vec<u8> {
        let mut line = Vec::new();
        write_line(&mut line, message);
        line
    }

    /// Adds a line made with [`Self::line`].
    fn push_line(&mut self, line: Vec<u8>) {
        if self.lines.is_empty() {
            self.lines = line;
        } else {
            self.lines.extend_from_slice(&line);
        }
    }

    /// What is still to be written.
    fn bytes(&self) -> &[u8] {
        &self.lines[self.written..]
    }

    /// Counts `count` more bytes written.
    fn advance(&mut self, count: usize) {
        self.written += count;
        if self.is_empty() {
            self.clear();
        }
    }

    /// Drops what is left.
    fn clear(&mut self) {
        self.lines.clear();
        self.written = 0;
        if self.lines.capacity() > KEPT_OUTBOX_CAPACITY {
            self.lines = Vec::new();
        }
    }
}

/// Appends `message` and a line end to `lines`.
fn write_line(lines: &mut Vec<u8>, message: &ToWorker) {
    let end = lines.len();
    if serde_json::to_writer(&mut *lines, message).is_err() {
        // A message of ours always serializes; should one not, nothing of it goes out.
        lines.truncate(end);
        return;
    }
    lines.push(b'\n');
}

/// Writes one message to a worker's stdin.
async fn write_message(stdin: &mut pipe::Sender, message: &ToWorker) -> io::Result<()> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    stdin.write_all(&line).await?;
    stdin.flush().await
}

impl Drop for WorkerExecution {
    fn drop(&mut self) {
        let pool = self.pool.take();
        if let Some(pool) = &pool {
            pool.inner.busy.fetch_sub(1, Ordering::Relaxed);
            if let Some((session, worker, uses)) = self.keepable() {
                drop(pool.inner.keep(session, worker, uses));
                // A fresh worker it came from is replaced.
                pool.replenish(When::Soon);
                return;
            }
        }
        let Some(mut worker) = self.worker.take() else {
            return;
        };
        // Its process is reaped in the background (by tokio, or by the fork server).
        let runtime = tokio::runtime::Handle::try_current();
        match runtime {
            // A worker that reported its outcome is let go by closing its stdin (it exits),
            // and this execution's answer is being sent: it is made sure of (killed, should it
            // still run) a moment later, when its replacement starts.
            Ok(runtime) if self.finished.is_some() => {
                runtime.spawn(async move {
                    drop(worker.stdin);
                    tokio::time::sleep(REPLACEMENT_DELAY).await;
                    worker.process.start_kill();
                    drop(worker.process);
                    if let Some(pool) = pool {
                        pool.replenish(When::Now);
                    }
                });
            }
            // Any other is not needed any more.
            _ => {
                worker.process.start_kill();
                if let Some(pool) = pool {
                    pool.replenish(When::Soon);
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confine::Ceilings;
    use toolweave_sandbox::{EngineLimits, Language, Manifest};

    impl WorkerExecution {
        fn pid(&self) -> Option<u32> {
            self.worker.as_ref().and_then(|worker| worker.process.id())
        }
    }

    /// A pool whose "worker" is a shell script: the host side is what is under test.
    fn pool(script: &str) -> WorkerPool {
        let command = WorkerCommand {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into(), "sh".into()],
            env: Vec::new(),
        };
        let spec = WorkerSpec {
            kind: WorkerKind::JavaScript,
            ceilings: Ceilings {
                address_space: 1 << 30,
                cpu_seconds: 10,
            },
            stack_bytes: 256 * 1024,
        };
        WorkerPool::with_fork_server(command, spec, std::env::temp_dir(), 0, false)
    }

    fn request() -> ExecuteRequest {
        ExecuteRequest {
            code: "return 1".to_owned(),
            language: Language::JavaScript,
            limits: EngineLimits {
                timeout: Duration::from_secs(5),
                memory_bytes: 16 << 20,
                stack_bytes: 256 * 1024,
                max_log_bytes: 1024,
                max_result_bytes: 1024,
                max_tool_calls: 1,
            },
            manifest: Arc::new(Manifest {
                namespaces: Vec::new(),
            }),
        }
    }

    /// How a session whose worker runs `script` ends, when it ends without an outcome.
    async fn ended_early(script: &str) -> String {
        ended_early_with(script, &request()).await
    }

    /// [`ended_early`] for a job of `request`.
    async fn ended_early_with(script: &str, request: &ExecuteRequest) -> String {
        let mut session = pool(script).start(request, None).await.unwrap();
        assert!(session.next().await.is_none());
        let EngineError::Internal { message } = session.ended_early().await else {
            panic!("expected an internal error");
        };
        message
    }

    #[tokio::test]
    async fn a_message_that_is_not_one_is_an_internal_error_not_a_cancel() {
        let message = ended_early("read job; echo 'not a message'; sleep 5").await;
        assert!(message.contains("could not read"), "{message}");
    }

    /// A waiting forked worker outlives its fork server by a moment (the parent-death signal
    /// takes a while under load), and its pipe still takes a job then: the pool must not send it
    /// one, or the execution dies with the worker.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_waiting_worker_whose_fork_server_is_gone_is_not_handed_the_job() {
        use std::process::Stdio;

        let folder = tempfile::tempdir().unwrap();
        let taken = folder.path().join("taken");
        let pool = pool("read job; sleep 5");
        let Pipes {
            worker: [stdin_end, stdout_end, stderr_end],
            stdin,
            stdout,
            stderr,
        } = Pipes::new().unwrap();
        let mut doomed = std::process::Command::new("/bin/sh")
            .args(["-c", &format!("read job && touch '{}'", taken.display())])
            .stdin(Stdio::from(stdin_end))
            .stdout(Stdio::from(stdout_end))
            .stderr(Stdio::from(stderr_end))
            .spawn()
            .unwrap();
        // Its fork server is gone: the channel that would tell how it ended is closed.
        let (fork_server_gone, ended) = tokio::sync::oneshot::channel();
        drop(fork_server_gone);
        let process = Process::Forked(Forked {
            worker: ForkedWorker {
                pid: doomed.id(),
                // Not a pidfd: the kill through it fails, and the test ends the process itself.
                pidfd: std::fs::File::open("/dev/null").unwrap().into(),
                ended,
                expects: None,
            },
            status: None,
        });
        let waiting = Pipes::connect(stdin, stdout, stderr, process).unwrap();
        pool.inner.idle.lock().unwrap().workers.push(waiting);

        let session = pool.start(&request(), None).await.unwrap();
        assert_ne!(session.pid(), Some(doomed.id()));
        // Dropped without a job: its stdin closed unread, so `read` failed.
        let status = tokio::time::timeout(
            Duration::from_secs(5),
            tokio::task::spawn_blocking(move || doomed.wait()),
        )
        .await
        .expect("the waiting worker's stdin was not closed")
        .unwrap()
        .unwrap();
        assert!(!status.success(), "it read a job");
        assert!(!taken.exists(), "it was handed the job");
    }

    #[tokio::test]
    async fn a_worker_that_writes_a_message_past_its_bound_is_stopped_and_named() {
        let mut request = request();
        request.limits.memory_bytes = 1 << 20;
        let max = FromEngine::max_line(&request.limits);
        // Endless output without a line end; the worker would then wait for 30 s.
        let message =
            ended_early_with("read job; tr '\\0' x < /dev/zero; sleep 30", &request).await;
        assert_eq!(
            message,
            format!(
                "the worker process running the code wrote a message longer than {max} bytes, \
                 more than a program under these limits can send; it was stopped"
            )
        );
    }

    #[tokio::test]
    async fn what_a_worker_writes_to_stderr_is_read_to_its_end_and_held_bounded() {
        // A line longer than anything kept, bytes that are not UTF-8, then its last words.
        let message = ended_early(
            "read job; head -c 10000000 /dev/zero | tr '\\0' e >&2; printf '\\n\\377\\376\\n' >&2; \
             echo 'engine: out of luck' >&2; exit 3",
        )
        .await;
        assert!(message.contains("exit status: 3"), "{message}");
        let end: String = message
            .chars()
            .rev()
            .take(100)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        assert!(
            message.ends_with("eeee… (cut)\n\u{fffd}\u{fffd}\nengine: out of luck"),
            "{end}"
        );
        assert!(message.len() < STDERR_TAIL_BYTES + 200, "{}", message.len());
    }

    #[tokio::test]
    async fn a_worker_that_dies_is_reported_with_its_status_and_last_words() {
        let message = ended_early("read job; echo 'engine: out of luck' >&2; exit 3").await;
        assert!(message.contains("exit status: 3"), "{message}");
        assert!(message.contains("engine: out of luck"), "{message}");
    }

    /// A script that answers every job with `outcome`, as a worker that runs jobs one after
    /// another does.
    fn answering(outcome: Outcome) -> String {
        let finished = serde_json::to_string(&FromEngine::Finished(outcome)).unwrap();
        format!("while read job; do printf '%s\\n' '{finished}'; done")
    }

    fn outcome(result: Result<serde_json::Value, EngineError>) -> Outcome {
        Outcome {
            result,
            stats: Default::default(),
        }
    }

    fn session(number: u64, identity: Option<&str>) -> Option<SessionKey> {
        Some(SessionKey {
            session: number,
            identity: identity.map(Arc::from),
        })
    }

    /// Runs one execution for `key` to its outcome; the worker's process id.
    async fn run_for(pool: &WorkerPool, key: Option<SessionKey>) -> u32 {
        let mut execution = pool.start(&request(), key).await.unwrap();
        let pid = execution.pid().unwrap();
        assert!(matches!(
            execution.next().await,
            Some(FromEngine::Finished(_))
        ));
        pid
    }

    #[tokio::test]
    async fn a_worker_runs_the_next_execution_of_its_session_and_of_no_other() {
        let pool = pool(&answering(outcome(Ok(serde_json::json!(2)))));
        let first = run_for(&pool, session(1, None)).await;
        assert_eq!(run_for(&pool, session(1, None)).await, first, "not kept");
        // Another session, the same session for another identity, and no session at all each
        // get a worker of their own.
        let other = run_for(&pool, session(2, None)).await;
        let identity = run_for(&pool, session(1, Some("alice"))).await;
        let none = run_for(&pool, None).await;
        let pids = [first, other, identity, none];
        for (index, pid) in pids.iter().enumerate() {
            assert!(!pids[..index].contains(pid), "{pids:?}");
        }
        assert_eq!(run_for(&pool, session(1, None)).await, first);
        assert_eq!(run_for(&pool, session(2, None)).await, other);
        // Kept: sessions 1, 2 and 1 for alice; the worker without a session was let go.
        assert_eq!(pool.count().1, 3);
    }

    #[tokio::test]
    async fn a_worker_whose_execution_ended_past_a_limit_or_with_a_large_heap_is_not_kept() {
        let spent = [
            outcome(Err(EngineError::Timeout {
                limit: Duration::from_secs(1),
            })),
            outcome(Err(EngineError::MemoryLimit { limit: 1 })),
            outcome(Err(EngineError::StackOverflow)),
            outcome(Err(EngineError::Internal {
                message: "broken".to_owned(),
            })),
            Outcome {
                result: Ok(serde_json::json!(1)),
                stats: toolweave_sandbox::Stats {
                    memory_peak_bytes: MAX_KEPT_HEAP + 1,
                    ..Default::default()
                },
            },
        ];
        for outcome in spent {
            let described = format!("{:?}", outcome.result);
            let pool = pool(&answering(outcome));
            let first = run_for(&pool, session(1, None)).await;
            assert_ne!(run_for(&pool, session(1, None)).await, first, "{described}");
        }
        // A program that threw leaves its worker as it found it.
        let thrown = outcome(Err(EngineError::Guest {
            name: "Error".to_owned(),
            message: "no".to_owned(),
            line: None,
            column: None,
            stack: None,
        }));
        let pool = pool(&answering(thrown));
        let first = run_for(&pool, session(1, None)).await;
        assert_eq!(run_for(&pool, session(1, None)).await, first);
    }

    #[tokio::test]
    async fn a_cancelled_execution_does_not_leave_its_worker_kept() {
        let pool = pool("read job; sleep 30");
        let mut execution = pool.start(&request(), session(1, None)).await.unwrap();
        let pid = execution.pid().unwrap();
        execution.cancel();
        assert!(execution.next().await.is_none());
        drop(execution);
        assert_eq!(pool.count().1, 0);
        let pool2 = pool.clone();
        let next = pool2.start(&request(), session(1, None)).await.unwrap();
        assert_ne!(next.pid(), Some(pid));
    }
}
