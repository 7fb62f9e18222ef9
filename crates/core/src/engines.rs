//! The local executor, [`Engines`]: guest code on engine threads of this process, or in
//! confined worker processes. Each execution it starts is a [`Placed`], an execution by where it
//! runs. The traits it implements are in `executor.rs`.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::mpsc;
use toolweave_config::Limits;
use toolweave_process::confine::{self, Ceilings};
use toolweave_process::{
    FromEngine, SessionKey, WorkerCommand, WorkerExecution, WorkerKind, WorkerPool, WorkerSpec,
};
use toolweave_sandbox::{
    Engine, EngineError, EnginePool, ExecuteRequest, HostReply, Job, MAX_CODE_BYTES, Manifest,
    ThreadExecution,
};

use crate::executor::{Executor, Running, failed};

/// Engine threads kept ready between executions; more start on demand. Four, so that a client
/// sending one program after another finds a prepared thread each time: a thread prepares its
/// next runtime 2 ms after its execution when another is prepared (back to back, four answer
/// faster than two; each costs a little memory).
const IDLE_ENGINES: usize = 4;
/// Worker processes of each kind kept started ahead of demand.
const IDLE_WORKERS: usize = 4;

/// Where JavaScript and TypeScript run. Python always runs in worker processes when the
/// gateway can start them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// On engine threads of the gateway process: the fastest path, for trusted setups.
    InProcess,
    /// In confined worker processes: each session's executions one after another in workers
    /// of its own, each execution in a fresh engine runtime.
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
    /// Python without a memory limit. With `fresh_workers`, no worker is kept for a session's
    /// next execution. Must be called within the tokio runtime (workers start in the background
    /// at once).
    pub fn new(
        isolation: Isolation,
        worker: Option<WorkerCommand>,
        limits: &Limits,
        fresh_workers: bool,
    ) -> Self {
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
            WorkerPool::new(
                command,
                spec,
                cwd.clone(),
                IDLE_WORKERS,
                first_at_once,
                !fresh_workers,
            )
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
        // none is kept waiting with a prepared runtime (what four would cost the gateway's start:
        // docs/benchmarks.md, "Figures behind choices in the code"). One starts on demand should
        // a job ever need it.
        let idle_engines = if javascript_workers.is_some() && python_workers.is_some() {
            0
        } else {
            IDLE_ENGINES
        };
        Self {
            threads: EnginePool::within_address_space(
                idle_engines,
                limits.stack_bytes,
                limits.memory_bytes,
            ),
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

    /// Starts `request`, run for `session`, where its language belongs.
    async fn place(
        &self,
        request: ExecuteRequest,
        session: Option<SessionKey>,
    ) -> Box<dyn Running> {
        // The engine refuses it too; refused here, a program too large is not copied to a
        // worker first.
        if request.code.len() > MAX_CODE_BYTES {
            return failed(EngineError::CodeTooLarge {
                size: request.code.len(),
                limit: MAX_CODE_BYTES,
            });
        }
        let workers = match request.language.engine() {
            Engine::QuickJs => &self.javascript_workers,
            // Python's memory limit is the worker's process-wide allocator: without a worker
            // process it has none, so Python goes to one whenever there is one.
            Engine::Monty => &self.python_workers,
        };
        if let Some(workers) = workers {
            return match workers.start(&request, session).await {
                Ok(execution) => Box::new(Placed::Worker(Box::new(execution))),
                Err(message) => failed(EngineError::Internal { message }),
            };
        }
        let (events_tx, events) = mpsc::unbounded_channel();
        let sink = events_tx.clone();
        let execution = self.threads.submit(Job {
            request,
            // The receiver is gone only when the host gave up on this execution.
            emit: Box::new(move |event| {
                let _ = sink.send(FromEngine::Event(event));
            }),
            finished: Box::new(move |outcome| {
                let _ = events_tx.send(FromEngine::Finished(outcome));
            }),
        });
        Box::new(Placed::Thread { events, execution })
    }
}

impl Executor for Engines {
    fn start(
        &self,
        request: ExecuteRequest,
        session: Option<SessionKey>,
    ) -> BoxFuture<'_, Box<dyn Running>> {
        Box::pin(self.place(request, session))
    }

    /// Workers started from now on are told `manifest`, so a job with it need not carry it.
    fn expect(&self, manifest: &Arc<Manifest>) {
        for workers in [&self.javascript_workers, &self.python_workers]
            .into_iter()
            .flatten()
        {
            workers.expect(manifest.clone());
        }
    }

    fn workers(&self) -> Vec<crate::WorkerCount> {
        [&self.javascript_workers, &self.python_workers]
            .into_iter()
            .flatten()
            .map(|pool| {
                let (waiting, kept, busy) = pool.count();
                crate::WorkerCount {
                    kind: pool.kind(),
                    waiting,
                    kept,
                    busy,
                }
            })
            .collect()
    }
}

/// An execution of [`Engines`] by where it runs: on a thread of this process or in a worker.
#[derive(Debug)]
enum Placed {
    /// On an engine thread of this process.
    Thread {
        /// Events and the outcome, sent by the engine thread.
        events: mpsc::UnboundedReceiver<FromEngine>,
        /// Replies and cancel.
        execution: ThreadExecution,
    },
    /// In a worker process, whose pipes this task reads and writes.
    Worker(Box<WorkerExecution>),
}

impl Running for Placed {
    fn next(&mut self) -> BoxFuture<'_, Option<FromEngine>> {
        Box::pin(async move {
            match self {
                Self::Thread { events, .. } => events.recv().await,
                Self::Worker(execution) => execution.next().await,
            }
        })
    }

    fn reply(&mut self, reply: HostReply) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            match self {
                Self::Thread { execution, .. } => execution.reply(reply),
                Self::Worker(execution) => {
                    let large = crate::json_size::is_large_reply(&reply);
                    execution.reply(reply, large).await;
                }
            }
        })
    }

    /// A thread stops at its next interrupt check, within milliseconds; a worker process is
    /// killed at once.
    fn cancel(&mut self) {
        match self {
            Self::Thread { execution, .. } => execution.cancel(),
            Self::Worker(execution) => execution.cancel(),
        }
    }

    fn ended_early(&mut self) -> BoxFuture<'_, EngineError> {
        Box::pin(async move {
            match self {
                Self::Worker(execution) => execution.ended_early().await,
                Self::Thread { .. } => EngineError::Internal {
                    message: "the engine ended without an outcome".to_owned(),
                },
            }
        })
    }
}
