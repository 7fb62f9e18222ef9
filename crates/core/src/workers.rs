//! The host side of worker processes: started ahead of demand, driven by the execution's task.
//!
//! A worker is the `toolweave` binary started again as a worker (`toolweave_sandbox::worker_main`)
//! for one kind of program; it runs exactly one execution and exits. This side keeps a few
//! started per kind, hands one its job, and then reads and writes the worker's pipes directly in
//! the execution's task: an event written by the worker wakes the protocol thread once, with no
//! relay thread in between. The host owns the deadline: a worker that does not stop when asked
//! is killed.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use toolweave_sandbox::{
    EngineError, ExecuteRequest, FromWorker, HostReply, MEMORY_EXIT_CODE, ToWorker, WorkerCommand,
    WorkerSpec,
};

/// How long a cancelled worker gets to stop on its own before it is killed.
const CANCEL_GRACE: Duration = Duration::from_millis(250);
/// How long the host waits for the exit status of a worker that ended without an outcome.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// Worker processes of one kind, started ahead of demand. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct WorkerPool {
    inner: Arc<PoolInner>,
}

#[derive(Debug)]
struct PoolInner {
    command: WorkerCommand,
    spec: WorkerSpec,
    /// An empty directory the workers start in.
    directory: PathBuf,
    idle: Mutex<Vec<Worker>>,
    idle_target: usize,
}

/// A started worker: the process and its pipes.
#[derive(Debug)]
struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    stderr: StderrTail,
}

/// What a worker writes to stderr goes to the gateway's log; the last of it is kept for the error
/// of a worker that dies. (A worker may not write to files, so it cannot share the gateway's
/// stderr, which may be one.)
#[derive(Debug)]
struct StderrTail {
    tail: Arc<Mutex<String>>,
    reader: tokio::task::JoinHandle<()>,
}

/// How much of a worker's stderr is kept for its error.
const STDERR_TAIL_BYTES: usize = 2048;

impl StderrTail {
    fn follow(stderr: ChildStderr, pid: Option<u32>) -> Self {
        let tail = Arc::new(Mutex::new(String::new()));
        let kept = tail.clone();
        let reader = tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::warn!(worker = pid, "{line}");
                let mut tail = kept.lock().unwrap_or_else(PoisonError::into_inner);
                if !tail.is_empty() {
                    tail.push('\n');
                }
                tail.push_str(&line);
                if tail.len() > STDERR_TAIL_BYTES {
                    let mut cut = tail.len() - STDERR_TAIL_BYTES;
                    while !tail.is_char_boundary(cut) {
                        cut += 1;
                    }
                    tail.drain(..cut);
                }
            }
        });
        Self { tail, reader }
    }

    /// The last lines, once the worker's stderr is closed (or shortly after it ended).
    async fn last_words(&mut self) -> String {
        let _ = tokio::time::timeout(Duration::from_millis(200), &mut self.reader).await;
        self.tail
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .trim()
            .to_owned()
    }
}

impl WorkerPool {
    /// A pool of `kind` workers keeping `idle_target` started; the first start in the background.
    /// Must be called within the tokio runtime.
    pub(crate) fn new(
        command: WorkerCommand,
        spec: WorkerSpec,
        directory: PathBuf,
        idle_target: usize,
    ) -> Self {
        let pool = Self {
            inner: Arc::new(PoolInner {
                command,
                spec,
                directory,
                idle: Mutex::new(Vec::new()),
                idle_target,
            }),
        };
        pool.replenish();
        pool
    }

    /// Starts `request` in a worker (a waiting one, or one started now).
    pub(crate) async fn start(&self, request: &ExecuteRequest) -> Result<WorkerSession, String> {
        let idle = self
            .inner
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let worker = match idle {
            Some(worker) => worker,
            None => self
                .inner
                .start_worker()
                .map_err(|error| format!("cannot start a worker process: {error}"))?,
        };
        let mut session = WorkerSession {
            lines: BufReader::new(worker.stdout).lines(),
            stdin: worker.stdin,
            child: worker.child,
            stderr: worker.stderr,
            memory_limit: request.limits.memory_bytes,
            kill_at: None,
            killed: false,
            garbled: None,
            pool: Some(self.clone()),
        };
        session
            .send(&ToWorker::Start(request.clone()))
            .await
            .map_err(|error| format!("the worker process did not take the job: {error}"))?;
        Ok(session)
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
        // Starting a process blocks until it has executed the binary: off the protocol thread.
        tokio::task::spawn_blocking(move || {
            for _ in 0..missing {
                match inner.start_worker() {
                    Ok(worker) => {
                        let mut idle = inner.idle.lock().unwrap_or_else(PoisonError::into_inner);
                        if idle.len() < inner.idle_target {
                            idle.push(worker);
                        }
                        // Otherwise the worker is dropped, which kills it (kill_on_drop).
                    }
                    Err(error) => {
                        tracing::warn!(%error, "cannot start a worker process ahead of time");
                        return;
                    }
                }
            }
        });
    }
}

impl PoolInner {
    fn start_worker(&self) -> std::io::Result<Worker> {
        let mut command = Command::new(&self.command.program);
        command
            .args(&self.command.args)
            .args(self.spec.arguments())
            .env_clear()
            .envs(self.command.env.iter().map(|(key, value)| (key, value)))
            .current_dir(&self.directory)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(std::io::Error::other("the worker's pipes were not set up"));
        };
        let stderr = StderrTail::follow(stderr, child.id());
        Ok(Worker {
            child,
            stdin,
            stdout,
            stderr,
        })
    }
}

/// One execution in a worker process, driven by the execution's task.
#[derive(Debug)]
pub(crate) struct WorkerSession {
    lines: Lines<BufReader<ChildStdout>>,
    stdin: ChildStdin,
    child: Child,
    stderr: StderrTail,
    memory_limit: usize,
    /// When a cancelled worker that has not stopped is killed.
    kill_at: Option<tokio::time::Instant>,
    killed: bool,
    /// Why a message from the worker could not be read, if one could not.
    garbled: Option<String>,
    /// Told when this worker is done, to start its replacement then (not while it runs:
    /// starting a process costs a core for a millisecond or two).
    pool: Option<WorkerPool>,
}

impl WorkerSession {
    /// The worker's next message; `None` once it ended without an outcome. Cancel safe.
    pub(crate) async fn next(&mut self) -> Option<FromWorker> {
        loop {
            let line = match self.kill_at {
                Some(kill_at) if !self.killed => tokio::select! {
                    line = self.lines.next_line() => line,
                    () = tokio::time::sleep_until(kill_at) => {
                        self.killed = true;
                        let _ = self.child.start_kill();
                        continue;
                    }
                },
                _ => self.lines.next_line().await,
            };
            match line {
                Ok(Some(line)) => match serde_json::from_str(&line) {
                    Ok(message) => return Some(message),
                    Err(error) => {
                        tracing::error!(%error, "a worker wrote something that is not a message");
                        self.garbled = Some(error.to_string());
                        self.kill();
                        return None;
                    }
                },
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// Delivers one reply to the guest; a worker that is gone is reported by [`Self::next`].
    pub(crate) async fn reply(&mut self, reply: HostReply) {
        let _ = self.send(&ToWorker::Reply(reply)).await;
    }

    /// Asks the worker to stop, and arms its kill should it not stop on its own.
    pub(crate) async fn cancel(&mut self) {
        if self.kill_at.is_none() {
            self.kill_at = Some(tokio::time::Instant::now() + CANCEL_GRACE);
        }
        let _ = self.send(&ToWorker::Reply(HostReply::Cancel)).await;
    }

    /// Kills the worker now.
    pub(crate) fn kill(&mut self) {
        self.killed = true;
        let _ = self.child.start_kill();
    }

    /// Why the worker ended without an outcome, from its exit status.
    pub(crate) async fn ended_early(&mut self) -> EngineError {
        let status = tokio::time::timeout(EXIT_WAIT, self.child.wait()).await;
        if let Some(error) = &self.garbled {
            return EngineError::Internal {
                message: format!(
                    "the worker process running the code sent a message the gateway could not \
                     read ({error}); it was stopped"
                ),
            };
        }
        if self.killed {
            return EngineError::Cancelled;
        }
        let status = match status {
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
        let last_words = self.stderr.last_words().await;
        if !last_words.is_empty() {
            message.push_str(&format!("; it wrote: {last_words}"));
        }
        EngineError::Internal { message }
    }

    async fn send(&mut self, message: &ToWorker) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        self.stdin.write_all(&line).await?;
        self.stdin.flush().await
    }
}

impl Drop for WorkerSession {
    fn drop(&mut self) {
        // A worker that reported its outcome exits on its own; any other is not needed any more.
        // Its process is reaped by tokio in the background.
        let _ = self.child.start_kill();
        if let Some(pool) = self.pool.take() {
            pool.replenish();
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
    use toolweave_sandbox::confine::Ceilings;
    use toolweave_sandbox::{EngineLimits, Language, Manifest, WorkerKind};

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
        WorkerPool::new(command, spec, std::env::temp_dir(), 0)
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
            manifest: Manifest {
                namespaces: Vec::new(),
            },
        }
    }

    #[tokio::test]
    async fn a_message_that_is_not_one_is_an_internal_error_not_a_cancel() {
        let mut session = pool("read job; echo 'not a message'; sleep 5")
            .start(&request())
            .await
            .unwrap();
        assert!(session.next().await.is_none());
        let EngineError::Internal { message } = session.ended_early().await else {
            panic!("expected an internal error");
        };
        assert!(message.contains("could not read"), "{message}");
    }

    #[tokio::test]
    async fn a_worker_that_dies_is_reported_with_its_status_and_last_words() {
        let mut session = pool("read job; echo 'engine: out of luck' >&2; exit 3")
            .start(&request())
            .await
            .unwrap();
        assert!(session.next().await.is_none());
        let EngineError::Internal { message } = session.ended_early().await else {
            panic!("expected an internal error");
        };
        assert!(message.contains("exit status: 3"), "{message}");
        assert!(message.contains("engine: out of luck"), "{message}");
    }
}
