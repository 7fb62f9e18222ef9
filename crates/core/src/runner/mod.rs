//! The remote runner, the gateway's side: executions run on a `toolweave runner` reached by a
//! command whose stdin and stdout carry the protocol (`ssh host toolweave runner`,
//! `docker exec -i ... toolweave runner`) or over TCP with a bearer token. Several executions
//! share one connection, each message carrying its execution's id, and a few connections are
//! kept open. The gateway keeps the tools, secrets, policy, limits and the deadline: what the
//! runner sends is read bounded, a call it makes is decided here like any other, and an
//! outcome it reports is checked against what the gateway saw (a timeout before the deadline,
//! a result over the limit, more console output than allowed are not taken).

mod serve;
mod wire;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use toolweave_config::Limits;
use toolweave_jsonrpc::tail::StderrTail;
use toolweave_process::{FromEngine, PROTOCOL_VERSION, WorkerJob};
use toolweave_sandbox::{EngineError, EngineLimits, ExecuteRequest, HostReply, Manifest, Outcome};

pub use serve::RunnerService;
use wire::{ENVELOPE_BYTES, FromRunner, MAX_HELLO_BYTES, Read, ToRunner};

use crate::executor::{Executor, Running, failed};

/// How long a connection may take to greet: a command such as `ssh` logs in first.
const HELLO_WAIT: Duration = Duration::from_secs(30);
/// Connections kept open to one runner; executions are spread over them.
const CONNECTIONS: usize = 2;
/// How much of a runner command's stderr is kept to explain its end.
const STDERR_TAIL_BYTES: usize = 2048;

/// How to reach a runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runner {
    /// A command whose stdin and stdout are the connection: `ssh host toolweave runner`,
    /// `kubectl exec -i pod -- toolweave runner`. Each connection starts it once.
    Command {
        /// The program.
        program: PathBuf,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A `toolweave runner --listen` at `address` (`host:port`), greeted with `token`.
    Tcp {
        /// Where it listens.
        address: String,
        /// The token it was started with.
        token: String,
    },
}

impl Runner {
    /// `program` with `args`, whose stdin and stdout carry the protocol.
    pub fn command(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self::Command {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
        }
    }

    /// A runner listening on TCP at `address` (`host:port`), which takes `token`.
    pub fn tcp(address: impl Into<String>, token: impl Into<String>) -> Self {
        Self::Tcp {
            address: address.into(),
            token: token.into(),
        }
    }

    /// What it is, for people and errors: the command line, or `tcp://address`.
    pub fn describe(&self) -> String {
        match self {
            Self::Command { program, args } => {
                let mut words = vec![program.display().to_string()];
                words.extend(args.iter().cloned());
                words.join(" ")
            }
            Self::Tcp { address, .. } => format!("tcp://{address}"),
        }
    }
}

/// The remote runner executor: executions run on a `toolweave runner`, reached as [`Runner`]
/// says. Made by [`GatewayBuilder::runner`](crate::GatewayBuilder::runner), or by
/// [`RemoteRunner::new`] for [`GatewayBuilder::executor`](crate::GatewayBuilder::executor).
#[derive(Debug)]
pub struct RemoteRunner {
    connections: Arc<Connections>,
}

/// The connections to one runner, shared with the executions on them.
#[derive(Debug)]
struct Connections {
    runner: Runner,
    /// Open connections (or none yet, or one that closed), each behind a lock held while it
    /// connects, so executions that need one at once wait for the same connect.
    slots: Vec<tokio::sync::Mutex<Option<Arc<Connection>>>>,
    turn: AtomicUsize,
    next_id: AtomicU64,
    /// The longest line a runner may send for an execution under the gateway's limits.
    max_line: usize,
}

impl RemoteRunner {
    /// An executor on `runner`, for executions under `limits`. Within a tokio runtime its
    /// connections open at once, so the first execution finds one ready.
    pub fn new(runner: Runner, limits: &Limits) -> Self {
        let engine_limits = crate::executor::engine_limits(limits);
        let connections = Arc::new(Connections {
            runner,
            slots: (0..CONNECTIONS)
                .map(|_| tokio::sync::Mutex::new(None))
                .collect(),
            turn: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
            max_line: FromEngine::max_line(&engine_limits).saturating_add(ENVELOPE_BYTES),
        });
        if tokio::runtime::Handle::try_current().is_ok() {
            for index in 0..CONNECTIONS {
                let connections = connections.clone();
                tokio::spawn(async move {
                    // Said once; each execution that finds no connection says it too.
                    if let Err(error) = connections.connection_at(index).await
                        && index == 0
                    {
                        tracing::warn!(runner = %connections.runner.describe(), "{error}");
                    }
                });
            }
        }
        Self { connections }
    }
}

impl Connections {
    /// An open connection: the one with the fewest executions in flight, the next in turn among
    /// equals. Messages on one connection arrive in order, so an execution flooding its
    /// connection (tens of thousands of console lines) would hold up any other behind it there.
    async fn connection(&self) -> Result<Arc<Connection>, String> {
        let first = self.turn.fetch_add(1, Ordering::Relaxed);
        let mut chosen = (usize::MAX, first % self.slots.len());
        for offset in 0..self.slots.len() {
            let index = (first + offset) % self.slots.len();
            // A slot being opened (locked) has nothing in flight yet.
            let in_flight = self.slots[index].try_lock().map_or(0, |slot| {
                slot.as_ref()
                    .filter(|connection| connection.is_open())
                    .map_or(0, |connection| lock(&connection.executions).len())
            });
            if in_flight < chosen.0 {
                chosen = (in_flight, index);
            }
        }
        self.connection_at(chosen.1).await
    }

    /// The open connection of slot `index`, opened (again) if it is not.
    async fn connection_at(&self, index: usize) -> Result<Arc<Connection>, String> {
        let mut slot = self.slots[index].lock().await;
        if let Some(connection) = slot.as_ref().filter(|connection| connection.is_open()) {
            return Ok(connection.clone());
        }
        let connection = Connection::open(&self.runner, self.max_line).await?;
        *slot = Some(connection.clone());
        Ok(connection)
    }

    /// Sends `request` as a new execution on a connection: its id, the connection, and where
    /// its messages arrive.
    async fn start(
        &self,
        request: &ExecuteRequest,
    ) -> Result<(u64, Arc<Connection>, mpsc::UnboundedReceiver<Delivery>), String> {
        let connection = self.connection().await?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, events) = mpsc::unbounded_channel();
        lock(&connection.executions).insert(id, sender);
        let expected = connection.expected(&request.manifest);
        connection.send(&ToRunner::Start {
            id,
            job: WorkerJob::new(request, Some(&expected)),
        });
        Ok((id, connection, events))
    }
}

impl Executor for RemoteRunner {
    /// The runner decides itself where its executions run; `session` is not sent.
    fn start(
        &self,
        request: ExecuteRequest,
        _session: Option<toolweave_process::SessionKey>,
    ) -> BoxFuture<'_, Box<dyn Running>> {
        Box::pin(async move {
            let (id, connection, events) = match self.connections.start(&request).await {
                Ok(started) => started,
                Err(message) => return failed(EngineError::Internal { message }),
            };
            Box::new(RemoteExecution {
                id,
                connection,
                events,
                started: Instant::now(),
                limits: request.limits,
                log_bytes: 0,
                finished: false,
                again: Some((self.connections.clone(), request)),
            }) as Box<dyn Running>
        })
    }
}

/// One connection to a runner.
#[derive(Debug)]
struct Connection {
    /// The runner, for errors.
    describe: String,
    /// Lines to write, in order.
    outbox: mpsc::UnboundedSender<Vec<u8>>,
    /// Where each running execution's messages go.
    executions: Mutex<HashMap<u64, mpsc::UnboundedSender<Delivery>>>,
    /// Why the connection closed, once it has.
    closed: Mutex<Option<String>>,
    /// The manifest the runner was last told to expect on this connection.
    expected: Mutex<Option<Arc<Manifest>>>,
    /// Cancelled when the connection closes: a runner command is stopped then.
    stop: tokio_util::sync::CancellationToken,
}

impl Connection {
    /// Connects, greets, and starts reading and writing.
    async fn open(runner: &Runner, max_line: usize) -> Result<Arc<Self>, String> {
        let describe = runner.describe();
        let opened = match runner {
            Runner::Command { program, args } => {
                Self::open_command(program, args, &describe, max_line).await
            }
            Runner::Tcp { address, token } => {
                Self::open_tcp(address, token, &describe, max_line).await
            }
        };
        opened.map_err(|what| format!("the runner {describe} {what}"))
    }

    /// Connects to a runner listening on TCP, and greets it with its token.
    async fn open_tcp(
        address: &str,
        token: &str,
        describe: &str,
        max_line: usize,
    ) -> Result<Arc<Self>, String> {
        let stream = tokio::time::timeout(HELLO_WAIT, tokio::net::TcpStream::connect(address))
            .await
            .map_err(|_| {
                format!(
                    "did not accept a connection within {} s",
                    HELLO_WAIT.as_secs()
                )
            })?
            .map_err(|error| format!("could not be reached: {error}; check --runner"))?;
        let _ = stream.set_nodelay(true);
        let (read, write) = stream.into_split();
        let token = Some(token.to_owned());
        Self::greet(
            describe.to_owned(),
            read,
            write,
            token,
            max_line,
            StderrTail::last_bytes(STDERR_TAIL_BYTES),
        )
        .await
    }

    /// Starts the command, keeps the tail of its stderr, and greets it; the command lives as
    /// long as its connection: stopped when the connection closes, and its end closes the
    /// connection.
    async fn open_command(
        program: &std::path::Path,
        args: &[String],
        describe: &str,
        max_line: usize,
    ) -> Result<Arc<Self>, String> {
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| format!("could not be started: {error}; check --runner"))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("was started without its pipes".to_owned());
        };
        let stderr_tail = StderrTail::last_bytes(STDERR_TAIL_BYTES);
        let tail = stderr_tail.clone();
        let name = describe.to_owned();
        tokio::spawn(toolweave_process::for_each_stderr_line(
            stderr,
            move |line| {
                tracing::info!(runner = %name, "{line}");
                tail.push(line);
            },
        ));
        let connection = Self::greet(
            describe.to_owned(),
            stdout,
            stdin,
            None,
            max_line,
            stderr_tail.clone(),
        )
        .await?;
        let reaper = Arc::downgrade(&connection);
        let stop = connection.stop.clone();
        tokio::spawn(async move {
            let status = tokio::select! {
                status = child.wait() => status,
                () = stop.cancelled() => {
                    let _ = child.kill().await;
                    child.wait().await
                }
            };
            let status = status.map_or_else(|error| error.to_string(), |status| status.to_string());
            if let Some(connection) = reaper.upgrade() {
                connection.close(format!("exited ({status})"), &stderr_tail);
            }
        });
        Ok(connection)
    }

    /// Says hello, checks the answer, and starts the reading and writing tasks.
    async fn greet(
        describe: String,
        read: impl AsyncRead + Unpin + Send + 'static,
        mut write: impl AsyncWrite + Unpin + Send + 'static,
        token: Option<String>,
        max_line: usize,
        stderr_tail: StderrTail,
    ) -> Result<Arc<Self>, String> {
        let hello = wire::line(&ToRunner::Hello {
            protocol: PROTOCOL_VERSION,
            token,
        });
        write
            .write_all(&hello)
            .await
            .map_err(|error| format!("could not be written to: {error}"))?;
        let _ = write.flush().await;
        let mut reader = BufReader::new(read);
        let mut line = Vec::new();
        let read = tokio::time::timeout(
            HELLO_WAIT,
            wire::read_line(&mut reader, &mut line, MAX_HELLO_BYTES),
        )
        .await
        .map_err(|_| format!("did not answer within {} s", HELLO_WAIT.as_secs()))?
        .map_err(|error| format!("could not be read: {error}"))?;
        let said = || {
            let tail = stderr_tail.text().trim().to_owned();
            if tail.is_empty() {
                String::new()
            } else {
                format!("; it wrote: {tail}")
            }
        };
        if read != Read::Line {
            return Err(format!(
                "closed the connection before it answered{}",
                said()
            ));
        }
        match serde_json::from_slice::<FromRunner>(&line) {
            Ok(FromRunner::Hello { protocol, .. }) if protocol == PROTOCOL_VERSION => {}
            Ok(FromRunner::Hello { protocol, runner }) => {
                return Err(format!(
                    "({runner}) speaks execution protocol version {protocol}, and this gateway \
                     version {PROTOCOL_VERSION}; run the same toolweave version on both sides"
                ));
            }
            Ok(FromRunner::Refused { message }) => {
                return Err(format!("refused the connection: {message}"));
            }
            _ => {
                return Err(format!(
                    "answered with something other than a runner's greeting: {}{}",
                    crate::error::cut(String::from_utf8_lossy(&line).into_owned(), 200),
                    said()
                ));
            }
        }
        let (outbox, lines) = mpsc::unbounded_channel();
        let connection = Arc::new(Self {
            describe,
            outbox,
            executions: Mutex::new(HashMap::new()),
            closed: Mutex::new(None),
            expected: Mutex::new(None),
            stop: tokio_util::sync::CancellationToken::new(),
        });
        // The tasks hold the connection weakly: once the gateway lets it go, the outbox closes,
        // the writer ends, the runner sees its input end, and the reader its output end.
        tokio::spawn(Self::write_lines(Arc::downgrade(&connection), write, lines));
        tokio::spawn(Self::read_messages(
            Arc::downgrade(&connection),
            reader,
            max_line,
            stderr_tail,
        ));
        Ok(connection)
    }

    fn is_open(&self) -> bool {
        lock(&self.closed).is_none()
    }

    /// Marks the connection closed for `why` (the first reason stays), and ends every
    /// execution on it: their next message is `None`, and they say why.
    fn close(&self, why: String, stderr_tail: &StderrTail) {
        {
            let mut closed = lock(&self.closed);
            if closed.is_none() {
                let tail = stderr_tail.text().trim().to_owned();
                *closed = Some(if tail.is_empty() {
                    why
                } else {
                    format!("{why}; it wrote: {tail}")
                });
            }
        }
        lock(&self.executions).clear();
        self.stop.cancel();
    }

    fn send(&self, message: &ToRunner) {
        self.send_line(wire::line(message));
    }

    /// Queues a line written already.
    fn send_line(&self, line: Vec<u8>) {
        let _ = self.outbox.send(line);
    }

    /// The manifest a job for `manifest` may leave out: told to the runner first when it is
    /// not the one it expects.
    fn expected(&self, manifest: &Arc<Manifest>) -> Arc<Manifest> {
        let mut expected = lock(&self.expected);
        match expected.as_ref() {
            Some(known) if Arc::ptr_eq(known, manifest) || known == manifest => known.clone(),
            _ => {
                self.send(&ToRunner::Expect(manifest.clone()));
                *expected = Some(manifest.clone());
                manifest.clone()
            }
        }
    }

    async fn write_lines(
        connection: Weak<Self>,
        write: impl AsyncWrite + Unpin,
        mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
    ) {
        let mut write = tokio::io::BufWriter::new(write);
        while let Some(line) = lines.recv().await {
            let mut result = write.write_all(&line).await;
            while let (Ok(()), Ok(line)) = (&result, lines.try_recv()) {
                result = write.write_all(&line).await;
            }
            if let Err(error) = result.and(write.flush().await) {
                if let Some(connection) = connection.upgrade() {
                    // The writer holds no stderr: an empty tail.
                    connection.close(
                        format!("could not be written to ({error})"),
                        &StderrTail::last_bytes(0),
                    );
                }
                return;
            }
        }
    }

    async fn read_messages(
        connection: Weak<Self>,
        mut reader: impl tokio::io::AsyncBufRead + Unpin,
        max_line: usize,
        stderr_tail: StderrTail,
    ) {
        let mut line = Vec::new();
        let why = loop {
            match wire::read_line(&mut reader, &mut line, max_line).await {
                Ok(Read::Line) => {}
                Ok(Read::End) => {
                    // A command that ended says how (its exit status) a moment later: that
                    // is the better reason, when it comes.
                    for _ in 0..50 {
                        if connection.upgrade().is_none_or(|open| !open.is_open()) {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    break "closed the connection".to_owned();
                }
                Ok(Read::TooLong) => {
                    break format!(
                        "sent a line longer than {max_line} bytes, more than a program under the \
                         gateway's limits can send; the connection was closed"
                    );
                }
                Err(error) => break format!("could not be read ({error})"),
            }
            let Some(open) = connection.upgrade() else {
                return;
            };
            match wire::parse::<FromRunner>(&mut line).await {
                Ok(FromRunner::Message { id, message }) => {
                    let mut executions = lock(&open.executions);
                    let finished = matches!(message, FromEngine::Finished(_));
                    // An id no execution waits for (one that ended here already) is dropped.
                    if let Some(sender) = executions.get(&id) {
                        let _ = sender.send(Delivery::Message(message));
                    }
                    if finished {
                        executions.remove(&id);
                    }
                }
                Ok(FromRunner::Taken { id }) => {
                    if let Some(sender) = lock(&open.executions).get(&id) {
                        let _ = sender.send(Delivery::Taken);
                    }
                }
                Ok(FromRunner::Refused { message }) => {
                    break format!("refused to go on: {message}");
                }
                Ok(FromRunner::Hello { .. }) | Err(_) => {
                    break format!(
                        "sent what is not a runner's message: {}; the connection was closed",
                        crate::error::cut(String::from_utf8_lossy(&line).into_owned(), 200)
                    );
                }
            }
        };
        if let Some(connection) = connection.upgrade() {
            if why != "closed the connection" {
                tracing::warn!(runner = %connection.describe, "the runner {why}");
            }
            connection.close(why, &stderr_tail);
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// What the connection's reader hands an execution.
#[derive(Debug)]
enum Delivery {
    /// The runner took the job.
    Taken,
    /// A message of the job's worker.
    Message(FromEngine),
}

/// One execution on a runner.
struct RemoteExecution {
    id: u64,
    connection: Arc<Connection>,
    events: mpsc::UnboundedReceiver<Delivery>,
    started: Instant,
    limits: EngineLimits,
    /// Console bytes received so far, counted here: the runner's count is not taken.
    log_bytes: usize,
    finished: bool,
    /// Until the runner says it took the job: how to start it again on another connection,
    /// should this one close first. The runner never read that job, so starting it again
    /// repeats nothing, and a connection that died while idle costs no execution.
    again: Option<(Arc<Connections>, ExecuteRequest)>,
}

impl RemoteExecution {
    /// The runner's outcome, where the gateway saw otherwise, replaced by what it saw.
    fn checked(&self, outcome: Outcome) -> Outcome {
        let elapsed = self.started.elapsed();
        let result = match outcome.result {
            Err(EngineError::Timeout { limit }) if elapsed < self.limits.timeout => {
                Err(EngineError::Internal {
                    message: format!(
                        "the runner {} reported a timeout of {} ms after {} ms, before the \
                         execution's limit of {} ms; the gateway does not take that report (the \
                         runner may be faulty)",
                        self.connection.describe,
                        limit.as_millis(),
                        elapsed.as_millis(),
                        self.limits.timeout.as_millis()
                    ),
                })
            }
            Ok(value) => {
                let size = crate::json_size::json_len(&value);
                if size > self.limits.max_result_bytes {
                    Err(EngineError::ResultTooLarge {
                        size,
                        limit: self.limits.max_result_bytes,
                    })
                } else {
                    Ok(value)
                }
            }
            other => other,
        };
        Outcome {
            result,
            stats: outcome.stats,
        }
    }
}

impl Running for RemoteExecution {
    fn next(&mut self) -> BoxFuture<'_, Option<FromEngine>> {
        Box::pin(async move {
            if self.finished {
                return None;
            }
            let message = loop {
                match self.events.recv().await {
                    Some(Delivery::Message(message)) => break message,
                    Some(Delivery::Taken) => self.again = None,
                    None => {
                        let (connections, request) = self.again.take()?;
                        let (id, connection, events) = connections.start(&request).await.ok()?;
                        tracing::info!(runner = %connection.describe, "a connection closed before its execution began; the execution was started again on another");
                        (self.id, self.connection, self.events) = (id, connection, events);
                    }
                }
            };
            match message {
                FromEngine::Finished(outcome) => {
                    self.finished = true;
                    Some(FromEngine::Finished(self.checked(outcome)))
                }
                FromEngine::Event(toolweave_sandbox::EngineEvent::Log { ref text, .. }) => {
                    self.log_bytes = self.log_bytes.saturating_add(text.len());
                    if self.log_bytes > self.limits.max_log_bytes {
                        self.finished = true;
                        self.cancel();
                        return Some(FromEngine::Finished(Outcome {
                            result: Err(EngineError::LogLimit {
                                limit: self.limits.max_log_bytes,
                            }),
                            stats: Default::default(),
                        }));
                    }
                    Some(message)
                }
                event => Some(event),
            }
        })
    }

    fn reply(&mut self, reply: HostReply) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if self.finished {
                return;
            }
            let large = crate::json_size::is_large_reply(&reply);
            let line = wire::line_of(ToRunner::Reply { id: self.id, reply }, large).await;
            self.connection.send_line(line);
        })
    }

    fn cancel(&mut self) {
        self.connection.send(&ToRunner::Reply {
            id: self.id,
            reply: HostReply::Cancel,
        });
    }

    fn ended_early(&mut self) -> BoxFuture<'_, EngineError> {
        let why = lock(&self.connection.closed)
            .clone()
            .unwrap_or_else(|| "stopped sending this execution's messages".to_owned());
        let message = format!(
            "the runner {} {why}; the execution was lost (the next one connects again)",
            self.connection.describe
        );
        Box::pin(async move { EngineError::Internal { message } })
    }
}

impl Drop for RemoteExecution {
    fn drop(&mut self) {
        if !self.finished {
            self.cancel();
        }
        lock(&self.connection.executions).remove(&self.id);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // What the locks guard (channels, a reason, a manifest) stays whole whatever panicked.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
