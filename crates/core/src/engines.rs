//! Where guest code runs: engine threads of this process, or worker processes.

use toolweave_sandbox::{EnginePool, Job, Language, WorkerCommand, WorkerPool};

/// Engine threads kept ready between executions. Two cover a client that runs one program at a
/// time plus one more arriving meanwhile; more start on demand.
const IDLE_ENGINES: usize = 2;
/// Worker processes kept started ahead of demand.
const IDLE_WORKERS: usize = 2;

/// Where JavaScript and TypeScript run. Python always runs in worker processes when the
/// gateway can start them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// On engine threads of the gateway process: the fastest path, for trusted setups.
    #[default]
    InProcess,
    /// In a worker process per execution.
    Worker,
}

/// The engines of one gateway.
#[derive(Debug)]
pub struct Engines {
    threads: EnginePool,
    workers: Option<WorkerPool>,
    isolation: Isolation,
}

impl Engines {
    /// Engines for guests with stack limits up to `stack_bytes`. Without a worker command
    /// everything runs in process, Python without a memory limit.
    pub fn new(isolation: Isolation, worker: Option<WorkerCommand>, stack_bytes: usize) -> Self {
        let workers = worker.map(|command| WorkerPool::new(command, IDLE_WORKERS));
        Self {
            threads: EnginePool::new(IDLE_ENGINES, stack_bytes),
            workers,
            isolation,
        }
    }

    /// Where this gateway runs JavaScript and TypeScript.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// Runs `job` where its language belongs; the outcome arrives through the job.
    pub(crate) fn submit(&self, job: Job) {
        let in_worker = match job.request.language {
            Language::JavaScript | Language::TypeScript => self.isolation == Isolation::Worker,
            // Python's memory limit is the worker's process-wide allocator: without a worker
            // process it has none, so Python goes to one whenever there is one.
            Language::Python => true,
        };
        match (&self.workers, in_worker) {
            (Some(workers), true) => workers.submit(job),
            _ => self.threads.submit(job),
        }
    }
}
