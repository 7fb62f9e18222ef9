//! Where guest code runs: engine threads of this process, or worker processes; and the session
//! the executor drives either way.

use std::path::PathBuf;

use tokio::sync::mpsc;
use toolweave_sandbox::confine::{self, Ceilings};
use toolweave_sandbox::{
    EngineError, EnginePool, ExecuteRequest, Execution, FromWorker, HostReply, Job, Language,
    MAX_CODE_BYTES, Outcome, WorkerCommand, WorkerKind, WorkerSpec,
};

use crate::workers::{WorkerPool, WorkerSession};
use toolweave_config::Limits;

/// Engine threads kept ready between executions; more start on demand. Four, so that a client
/// sending one program after another finds a prepared thread each time: a thread prepares its
/// next runtime 2 ms after its execution when another is prepared (measured back to back, one
/// in-process call: 0.87 ms with two, 0.76 ms with four; each costs about 0.3 MiB).
const IDLE_ENGINES: usize = 4;
/// Worker processes of each kind kept started ahead of demand.
const IDLE_WORKERS: usize = 4;

/// Where JavaScript and TypeScript run. Python always runs in worker processes when the
/// gateway can start them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// On engine threads of the gateway process: the fastest path, for trusted setups.
    InProcess,
    /// In a confined worker process per execution.
    #[default]
    Worker,
}

/// The engines of one gateway.
#[derive(Debug)]
pub struct Engines {
    threads: EnginePool,
    /// JavaScript workers, with worker isolation.
    javascript_workers: Option<WorkerPool>,
    /// Python workers, whenever the gateway can start workers.
    python_workers: Option<WorkerPool>,
    isolation: Isolation,
    /// The empty directory workers start in; removed with the gateway.
    _directory: Option<tempfile::TempDir>,
}

impl Engines {
    /// Engines for guests under `limits`. Without a worker command everything runs in process,
    /// Python without a memory limit. Must be called within the tokio runtime (workers start in
    /// the background at once).
    pub fn new(isolation: Isolation, worker: Option<WorkerCommand>, limits: &Limits) -> Self {
        let directory = worker.as_ref().and_then(|_| {
            tempfile::Builder::new()
                .prefix("toolweave-workers-")
                .tempdir()
                .map_err(|error| {
                    tracing::warn!(%error, "cannot create the empty directory workers start in; they start in /")
                })
                .ok()
        });
        let cwd = directory.as_ref().map_or_else(
            || PathBuf::from("/"),
            |directory| directory.path().to_owned(),
        );
        if worker.is_some() {
            for warning in confine::probe().warnings() {
                tracing::warn!("SANDBOX WEAKER THAN USUAL: {warning} (see `toolweave doctor`)");
            }
        }
        let ceilings =
            Ceilings::for_limits(limits.memory_bytes, limits.stack_bytes, limits.timeout);
        let pool = |command: WorkerCommand, kind, first_at_once| {
            let spec = WorkerSpec {
                kind,
                ceilings,
                stack_bytes: limits.stack_bytes,
            };
            WorkerPool::new(command, spec, cwd.clone(), IDLE_WORKERS, first_at_once)
        };
        // Python's first worker starts at once, JavaScript's a moment later: the upstream
        // servers and the fork servers all start together on a machine that may have two cores,
        // and Python's first execution has the tighter budget. (A JavaScript execution that
        // comes first starts its worker itself.)
        let python_workers = worker
            .clone()
            .map(|command| pool(command, WorkerKind::Python, true));
        let javascript_workers = worker
            .filter(|_| isolation == Isolation::Worker)
            .map(|command| pool(command, WorkerKind::JavaScript, false));
        let isolation = if javascript_workers.is_some() {
            Isolation::Worker
        } else {
            Isolation::InProcess
        };
        // With workers for both kinds of guest code, engine threads of this process run nothing:
        // none is kept waiting with a prepared runtime (four would cost about 1.2 MiB and 1.5 ms
        // of CPU while the gateway starts). One starts on demand should a job ever need it.
        let idle_engines = if javascript_workers.is_some() && python_workers.is_some() {
            0
        } else {
            IDLE_ENGINES
        };
        Self {
            threads: EnginePool::new(idle_engines, limits.stack_bytes),
            javascript_workers,
            python_workers,
            isolation,
            _directory: directory,
        }
    }

    /// Where this gateway runs JavaScript and TypeScript.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// The worker processes waiting and busy, per kind.
    pub fn workers(&self) -> Vec<crate::WorkerCount> {
        [&self.javascript_workers, &self.python_workers]
            .into_iter()
            .flatten()
            .map(WorkerPool::count)
            .collect()
    }

    /// The manifest the next executions will most likely have: workers started from now on are
    /// told it, so a job with it need not carry it.
    pub(crate) fn expect(&self, manifest: &std::sync::Arc<toolweave_sandbox::Manifest>) {
        for workers in [&self.javascript_workers, &self.python_workers]
            .into_iter()
            .flatten()
        {
            workers.expect(manifest.clone());
        }
    }

    /// Starts `request` where its language belongs.
    pub(crate) async fn start(&self, request: ExecuteRequest) -> Session {
        // The engine refuses it too; refused here, a program too large is not copied to a
        // worker first.
        if request.code.len() > MAX_CODE_BYTES {
            return Session::Failed(Some(EngineError::CodeTooLarge {
                size: request.code.len(),
                limit: MAX_CODE_BYTES,
            }));
        }
        let workers = match request.language {
            Language::JavaScript | Language::TypeScript => &self.javascript_workers,
            // Python's memory limit is the worker's process-wide allocator: without a worker
            // process it has none, so Python goes to one whenever there is one.
            Language::Python => &self.python_workers,
        };
        if let Some(workers) = workers {
            return match workers.start(&request).await {
                Ok(session) => Session::Worker(Box::new(session)),
                Err(message) => Session::Failed(Some(EngineError::Internal { message })),
            };
        }
        let (events_tx, events) = mpsc::unbounded_channel();
        let sink = events_tx.clone();
        let execution = self.threads.submit(Job {
            request,
            // The receiver is gone only when the host gave up on this execution.
            emit: Box::new(move |event| {
                let _ = sink.send(FromWorker::Event(event));
            }),
            finished: Box::new(move |outcome| {
                let _ = events_tx.send(FromWorker::Finished(outcome));
            }),
        });
        Session::Thread { events, execution }
    }
}

/// A running execution as the executor drives it: where its events come from and where its
/// replies go.
#[derive(Debug)]
pub(crate) enum Session {
    /// On an engine thread of this process.
    Thread {
        /// Events and the outcome, sent by the engine thread.
        events: mpsc::UnboundedReceiver<FromWorker>,
        /// Replies and cancel.
        execution: Execution,
    },
    /// In a worker process, whose pipes this task reads and writes.
    Worker(Box<WorkerSession>),
    /// It could not start; the error is taken once.
    Failed(Option<EngineError>),
}

impl Session {
    /// The next event or the outcome; `None` once the engine is gone without one. Cancel safe.
    pub(crate) async fn next(&mut self) -> Option<FromWorker> {
        match self {
            Self::Thread { events, .. } => events.recv().await,
            Self::Worker(session) => session.next().await,
            Self::Failed(error) => error.take().map(|error| {
                FromWorker::Finished(Outcome {
                    result: Err(error),
                    stats: Default::default(),
                })
            }),
        }
    }

    /// Delivers one reply to the guest.
    pub(crate) async fn reply(&mut self, reply: HostReply) {
        match self {
            Self::Thread { execution, .. } => execution.reply(reply),
            Self::Worker(session) => session.reply(reply).await,
            Self::Failed(_) => {}
        }
    }

    /// Stops the guest: a thread at its next interrupt check, within milliseconds; a worker
    /// process is killed at once.
    pub(crate) fn cancel(&mut self) {
        match self {
            Self::Thread { execution, .. } => execution.cancel(),
            Self::Worker(session) => session.cancel(),
            Self::Failed(_) => {}
        }
    }

    /// Why the engine ended without an outcome.
    pub(crate) async fn ended_early(&mut self) -> EngineError {
        match self {
            Self::Worker(session) => session.ended_early().await,
            Self::Thread { .. } | Self::Failed(_) => EngineError::Internal {
                message: "the engine ended without an outcome".to_owned(),
            },
        }
    }
}
