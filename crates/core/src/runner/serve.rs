//! The runner's side: `toolweave runner` takes jobs from a gateway over one connection (its
//! stdin and stdout, or a TCP connection) and runs each in a local confined worker, as the
//! gateway would run it on its own machine, passing the worker's messages back with the
//! execution's id. It keeps no tools, no secrets and no policy: every call a program makes is
//! a message to the gateway, which decides it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use toolweave_config::Limits;
use toolweave_process::{FromEngine, PROTOCOL_VERSION, WorkerJob};
use toolweave_sandbox::{EngineError, ExecuteRequest, HostReply, Manifest, Outcome};

use super::wire::{self, FromRunner, MAX_HELLO_BYTES, Read, ToRunner};
use crate::engines::{Engines, Isolation};
use crate::executor::Executor;

/// How long past a job's own deadline the runner waits for its worker before it stops it.
const DEADLINE_GRACE: Duration = Duration::from_secs(3);
/// The longest line a runner reads from a gateway: a manifest or a job (as a worker reads
/// before its job), or a reply within the runner's memory limit.
const MAX_SETUP_LINE_BYTES: usize = 64 * 1024 * 1024;

/// A runner: local confined workers for the jobs of every connection it serves, under
/// ceilings of its own.
#[derive(Debug)]
pub struct RunnerService {
    engines: Engines,
    limits: Limits,
    token: Option<String>,
}

impl RunnerService {
    /// A runner whose jobs run in workers started by `worker` (normally
    /// [`worker_command`](crate::worker_command)), refusing jobs whose limits are above
    /// `limits`; with `token`, a connection must greet it with that token. Call it within a
    /// tokio runtime: workers start at once.
    pub fn new(
        worker: toolweave_process::WorkerCommand,
        limits: Limits,
        token: Option<String>,
    ) -> Self {
        Self {
            // Jobs name no session (see `execute`): no worker is kept for one.
            engines: Engines::new(Isolation::Worker, Some(worker), &limits, true),
            limits,
            token,
        }
    }

    /// Serves one connection until the gateway closes it: jobs in, their workers' messages
    /// out. Executions still running when it closes are stopped.
    ///
    /// # Errors
    ///
    /// When the connection fails; a gateway that sends what is not a message, or a line
    /// longer than a message can be, is refused (`Refused`, then the connection closes).
    pub async fn serve(
        self: &Arc<Self>,
        input: impl AsyncRead + Unpin + Send,
        output: impl AsyncWrite + Unpin + Send + 'static,
    ) -> std::io::Result<()> {
        let mut input = BufReader::new(input);
        let (sender, outbox) = mpsc::unbounded_channel::<Vec<u8>>();
        let writer = tokio::spawn(write_lines(output, outbox));
        let result = self.converse(&mut input, &sender).await;
        drop(sender);
        // Whatever was queued (a refusal, the last outcomes) goes out before the connection
        // closes.
        let _ = writer.await;
        result
    }

    async fn converse(
        self: &Arc<Self>,
        input: &mut (impl tokio::io::AsyncBufRead + Unpin),
        out: &mpsc::UnboundedSender<Vec<u8>>,
    ) -> std::io::Result<()> {
        if !self.greeted(input, out).await? {
            return Ok(());
        }
        let refuse = |message: String| refuse(out, message);
        let mut line = Vec::new();
        let running: Arc<Mutex<HashMap<u64, mpsc::UnboundedSender<HostReply>>>> = Arc::default();
        let mut expected: Option<Arc<Manifest>> = None;
        let max_line = MAX_SETUP_LINE_BYTES.max(self.limits.memory_bytes + wire::ENVELOPE_BYTES);
        loop {
            match wire::read_line(input, &mut line, max_line).await? {
                Read::Line => {}
                Read::End => break,
                Read::TooLong => {
                    refuse(format!("a line longer than {max_line} bytes"));
                    break;
                }
            }
            let message = match wire::parse::<ToRunner>(&mut line).await {
                Ok(message) => message,
                Err(error) => {
                    refuse(format!("a message that could not be read: {error}"));
                    break;
                }
            };
            match message {
                ToRunner::Hello { .. } => {}
                ToRunner::Expect(manifest) => expected = Some(manifest),
                ToRunner::Start { id, job } => {
                    let _ = out.send(wire::line(&FromRunner::Taken { id }));
                    let (replies, receiver) = mpsc::unbounded_channel();
                    lock(&running).insert(id, replies);
                    let service = self.clone();
                    let out = out.clone();
                    let running = running.clone();
                    let expected = expected.clone();
                    tokio::spawn(async move {
                        let outcome = service.run(id, job, expected, receiver, &out).await;
                        lock(&running).remove(&id);
                        let message = FromEngine::Finished(outcome);
                        let large = crate::json_size::is_large_message(&message);
                        let message = FromRunner::Message { id, message };
                        let _ = out.send(wire::line_of(message, large).await);
                    });
                }
                ToRunner::Reply { id, reply } => {
                    if let Some(replies) = lock(&running).get(&id) {
                        let _ = replies.send(reply);
                    }
                }
            }
        }
        // Dropping the reply channels stops what still runs.
        lock(&running).clear();
        Ok(())
    }

    /// Reads the gateway's greeting and answers it: `false` when the connection is refused
    /// (another version, a wrong or missing token, not a greeting).
    async fn greeted(
        &self,
        input: &mut (impl tokio::io::AsyncBufRead + Unpin),
        out: &mpsc::UnboundedSender<Vec<u8>>,
    ) -> std::io::Result<bool> {
        let mut line = Vec::new();
        if wire::read_line(input, &mut line, MAX_HELLO_BYTES).await? != Read::Line {
            refuse(
                out,
                "the connection ended or its first line was too long before a Hello".to_owned(),
            );
            return Ok(false);
        }
        let Ok(ToRunner::Hello { protocol, token }) = serde_json::from_slice::<ToRunner>(&line)
        else {
            refuse(out, "the first message was not a Hello".to_owned());
            return Ok(false);
        };
        if protocol != PROTOCOL_VERSION {
            refuse(
                out,
                format!(
                    "the gateway speaks execution protocol version {protocol}, and this runner \
                 version {PROTOCOL_VERSION}; run the same toolweave version on both sides"
                ),
            );
            return Ok(false);
        }
        if let Some(expected) = &self.token
            && !token.is_some_and(|token| wire::same_token(&token, expected))
        {
            refuse(
                out,
                "the token is missing or wrong: give the gateway the token this runner was \
                 started with (--runner-token-env)"
                    .to_owned(),
            );
            return Ok(false);
        }
        let _ = out.send(wire::line(&FromRunner::Hello {
            protocol: PROTOCOL_VERSION,
            runner: format!("toolweave {}", env!("CARGO_PKG_VERSION")),
        }));
        Ok(true)
    }

    /// Runs one job to its outcome, passing its worker's events on.
    async fn run(
        &self,
        id: u64,
        job: WorkerJob,
        expected: Option<Arc<Manifest>>,
        mut replies: mpsc::UnboundedReceiver<HostReply>,
        out: &mpsc::UnboundedSender<Vec<u8>>,
    ) -> Outcome {
        let request = match self.request(job, expected) {
            Ok(request) => request,
            Err(message) => return failed(EngineError::Internal { message }),
        };
        let timeout = request.limits.timeout;
        // A job does not say which of the gateway's sessions it belongs to: each runs in a
        // fresh worker.
        let mut running = self.engines.start(request, None).await;
        let backstop = tokio::time::sleep(timeout + DEADLINE_GRACE);
        tokio::pin!(backstop);
        let mut cancelled = false;
        loop {
            tokio::select! {
                message = running.next() => match message {
                    Some(FromEngine::Finished(outcome)) => return outcome,
                    Some(event) => {
                        let large = crate::json_size::is_large_message(&event);
                        let message = FromRunner::Message { id, message: event };
                        let _ = out.send(wire::line_of(message, large).await);
                    }
                    None => return failed(running.ended_early().await),
                },
                reply = replies.recv(), if !cancelled => match reply {
                    Some(reply) => running.reply(reply).await,
                    // The gateway is gone, or no longer waits for this execution.
                    None => {
                        cancelled = true;
                        running.cancel();
                    }
                },
                () = &mut backstop => {
                    running.cancel();
                    return failed(EngineError::Timeout { limit: timeout });
                }
            }
        }
    }

    /// The job as a request this runner takes: its version, its manifest, and limits within
    /// the runner's own.
    fn request(
        &self,
        job: WorkerJob,
        expected: Option<Arc<Manifest>>,
    ) -> Result<ExecuteRequest, String> {
        if job.protocol != PROTOCOL_VERSION {
            return Err(format!(
                "the job is in execution protocol version {}, and this runner speaks version \
                 {PROTOCOL_VERSION}; run the same toolweave version on both sides",
                job.protocol
            ));
        }
        let own = &self.limits;
        let over = [
            (job.limits.memory_bytes > own.memory_bytes).then(|| {
                format!(
                    "{} MiB of memory (the runner's --memory-mb is {})",
                    job.limits.memory_bytes >> 20,
                    own.memory_bytes >> 20
                )
            }),
            (job.limits.timeout > own.timeout).then(|| {
                format!(
                    "{} ms (the runner's --timeout-ms is {})",
                    job.limits.timeout.as_millis(),
                    own.timeout.as_millis()
                )
            }),
            (job.limits.stack_bytes > own.stack_bytes).then(|| {
                format!(
                    "{} KiB of stack (the runner's --stack-kb is {})",
                    job.limits.stack_bytes >> 10,
                    own.stack_bytes >> 10
                )
            }),
        ];
        let over: Vec<String> = over.into_iter().flatten().collect();
        if !over.is_empty() {
            return Err(format!(
                "the job asks for {}, more than this runner allows; start the runner with limits \
                 at least the gateway's",
                over.join(" and ")
            ));
        }
        let manifest = job
            .manifest
            .or(expected)
            .ok_or_else(|| "the job named no tools and none were expected".to_owned())?;
        Ok(ExecuteRequest {
            code: job.code,
            language: job.language,
            limits: job.limits,
            manifest,
        })
    }
}

/// Writes each queued line, flushing when the queue is empty, until every sender is gone.
async fn write_lines(
    output: impl AsyncWrite + Unpin,
    mut outbox: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    let mut output = tokio::io::BufWriter::new(output);
    while let Some(line) = outbox.recv().await {
        if output.write_all(&line).await.is_err() {
            return;
        }
        while let Ok(line) = outbox.try_recv() {
            if output.write_all(&line).await.is_err() {
                return;
            }
        }
        if output.flush().await.is_err() {
            return;
        }
    }
}

/// Tells the gateway why this connection is refused (the caller then closes it).
fn refuse(out: &mpsc::UnboundedSender<Vec<u8>>, message: String) {
    tracing::warn!("refused a gateway: {message}");
    let _ = out.send(wire::line(&FromRunner::Refused { message }));
}

fn failed(error: EngineError) -> Outcome {
    Outcome {
        result: Err(error),
        stats: Default::default(),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // What the lock guards (a map of channels) stays whole whatever panicked while holding it.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
