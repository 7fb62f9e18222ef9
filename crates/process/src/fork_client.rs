//! The gateway's side of a worker fork server (`fork_server.rs`): start it, ask it
//! for workers, learn how each ended.
//!
//! Requests go out in order and the fork server answers them in order, so the oldest waiting
//! request takes each `Forked` answer. One reader task reads every event and hands it on.
//!
//! The manifest a worker should expect goes to the fork server once per catalog, just before the
//! first request that wants it; a worker forked after that starts with it, and is sent nothing
//! per execution (at 10,000 tools, a manifest is about 200 KB of JSON).

use std::collections::{HashMap, VecDeque};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::unix::AsyncFd;
use tokio::process::{Child, Command};
use tokio::sync::oneshot;
use toolweave_sandbox::Manifest;

use crate::fork_server::{self as server, ForkEvent};
use crate::{WorkerCommand, WorkerSpec};

use crate::worker_entry::FORK_SERVER_ARGUMENT;

/// A running fork server.
#[derive(Debug)]
pub(crate) struct ForkServer {
    socket: Arc<AsyncFd<OwnedFd>>,
    state: Arc<Mutex<State>>,
    /// Requests are written one at a time, so that answers match them in order; it holds the
    /// manifest the fork server was last given, which the workers it forks start with.
    sending: tokio::sync::Mutex<Option<Arc<Manifest>>>,
    /// The fork server's process: killed with this (its workers die with it).
    _process: Child,
    reader: tokio::task::JoinHandle<()>,
}

#[derive(Debug, Default)]
struct State {
    /// Requests sent and not answered yet, oldest first.
    waiting: VecDeque<oneshot::Sender<io::Result<ForkedWorker>>>,
    /// Workers running, by pid: told how they ended.
    running: HashMap<u32, oneshot::Sender<ExitStatus>>,
    /// Why the fork server is gone, once it is.
    gone: Option<String>,
}

/// A worker the fork server forked.
#[derive(Debug)]
pub(crate) struct ForkedWorker {
    pub(crate) pid: u32,
    /// Names the worker for good; it is killed through this.
    pub(crate) pidfd: OwnedFd,
    /// How it ended, once it has; closed without a value if the fork server went first.
    pub(crate) ended: oneshot::Receiver<ExitStatus>,
    /// The manifest it started with.
    pub(crate) expects: Option<Arc<Manifest>>,
}

impl ForkServer {
    /// Starts a fork server for `spec` workers, in `directory` with `command`'s environment.
    /// Must be called within the tokio runtime.
    pub(crate) fn start(
        command: &WorkerCommand,
        spec: &WorkerSpec,
        directory: &Path,
    ) -> io::Result<Self> {
        let (ours, theirs) = server::socket_pair()?;
        let mut process = Command::new(&command.program)
            .args(&command.args)
            .arg(FORK_SERVER_ARGUMENT)
            .args(spec.arguments())
            .env_clear()
            .envs(command.env.iter().map(|(key, value)| (key, value)))
            .current_dir(directory)
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        if let Some(stderr) = process.stderr.take() {
            let pid = process.id();
            tokio::spawn(crate::for_each_stderr_line(stderr, move |line| {
                tracing::warn!(fork_server = pid, "{line}");
            }));
        }
        let socket = Arc::new(register(ours)?);
        let state = Arc::new(Mutex::new(State::default()));
        let reader = tokio::spawn(read_events(socket.clone(), state.clone()));
        Ok(Self {
            socket,
            state,
            sending: tokio::sync::Mutex::new(None),
            _process: process,
            reader,
        })
    }

    /// A worker on these stdin, stdout and stderr (the worker's ends of its pipes), which starts
    /// expecting `manifest` (the fork server is given it first, if it has another); it warms up
    /// before it reads its job if `warm_up`.
    pub(crate) async fn fork(
        &self,
        stdio: [OwnedFd; 3],
        warm_up: bool,
        manifest: Option<&Arc<Manifest>>,
    ) -> io::Result<ForkedWorker> {
        let (answer_tx, answer) = oneshot::channel();
        let expects = {
            let mut given = self.sending.lock().await;
            if let Some(manifest) = manifest
                && must_give(&mut given, manifest)
            {
                self.give(manifest).await?;
                *given = Some(manifest.clone());
            }
            self.lock()
                .map(|mut state| state.waiting.push_back(answer_tx))?;
            let sent = loop {
                let mut ready = self.socket.writable().await?;
                let borrowed = [stdio[0].as_fd(), stdio[1].as_fd(), stdio[2].as_fd()];
                match ready
                    .try_io(|socket| server::request_worker(socket.as_fd(), borrowed, warm_up))
                {
                    Ok(sent) => break sent,
                    Err(_would_block) => continue,
                }
            };
            if let Err(error) = sent {
                // Not sent: not answered either. (Answers are taken from the front, and this
                // request, the newest, is at the back.)
                let _ = self.lock().map(|mut state| state.waiting.pop_back());
                return Err(error);
            }
            given.clone()
        };
        // The fork server holds its own copies now; ours close here.
        drop(stdio);
        let mut worker = answer.await.unwrap_or_else(|_| Err(gone_error(None)))?;
        worker.expects = expects;
        Ok(worker)
    }

    /// Gives the fork server `manifest`, for the workers it forks from now on.
    async fn give(&self, manifest: &Arc<Manifest>) -> io::Result<()> {
        // About 200 KB of JSON at 10,000 tools, once per catalog: written here, as a blocking
        // thread may not be had when executions fill the gateway's address space.
        let file = server::manifest_file(manifest)?;
        loop {
            let mut ready = self.socket.writable().await?;
            match ready.try_io(|socket| server::send_manifest(socket.as_fd(), file.as_fd())) {
                Ok(sent) => return sent,
                Err(_would_block) => continue,
            }
        }
    }

    /// Whether the fork server has ended (it forks no more workers).
    pub(crate) fn is_gone(&self) -> bool {
        self.lock().is_err()
    }

    /// The state, unless the fork server is gone.
    fn lock(&self) -> io::Result<std::sync::MutexGuard<'_, State>> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match &state.gone {
            Some(why) => Err(gone_error(Some(why))),
            None => Ok(state),
        }
    }
}

impl Drop for ForkServer {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

fn gone_error(why: Option<&str>) -> io::Error {
    io::Error::new(
        io::ErrorKind::BrokenPipe,
        match why {
            Some(why) => format!("the worker fork server is gone ({why})"),
            None => "the worker fork server is gone".to_owned(),
        },
    )
}

/// Whether `manifest` must go to a fork server that was last given `given`. A manifest with the
/// same names as the one given (a new catalog of the same tools) is not sent again, and is kept
/// as the one given, so later forks, and the jobs of the workers they make, compare pointers
/// rather than every name. One that must go is forgotten first: should it not go out whole, the
/// fork server may or may not have it, and the next fork gives it again.
fn must_give(given: &mut Option<Arc<Manifest>>, manifest: &Arc<Manifest>) -> bool {
    match given.as_ref() {
        Some(current) if Arc::ptr_eq(current, manifest) => false,
        Some(current) if current == manifest => {
            *given = Some(manifest.clone());
            false
        }
        _ => {
            *given = None;
            true
        }
    }
}

/// Reads every event until the fork server is gone, then fails what still waits on it.
async fn read_events(socket: Arc<AsyncFd<OwnedFd>>, state: Arc<Mutex<State>>) {
    let why = loop {
        let mut ready = match socket.readable().await {
            Ok(ready) => ready,
            Err(error) => break error.to_string(),
        };
        let event = match ready.try_io(|socket| server::read_event(socket.as_fd())) {
            Ok(Ok(Some(event))) => event,
            Ok(Ok(None)) => break "it ended".to_owned(),
            Ok(Err(error)) => break error.to_string(),
            Err(_would_block) => continue,
        };
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            ForkEvent::Forked { pid, pidfd } => {
                let (ended_tx, ended) = oneshot::channel();
                state.running.insert(pid, ended_tx);
                if let Some(waiting) = state.waiting.pop_front() {
                    // A requester that gave up drops the worker, which kills it.
                    let _ = waiting.send(Ok(ForkedWorker {
                        pid,
                        pidfd,
                        ended,
                        expects: None,
                    }));
                }
            }
            ForkEvent::Failed(error) => {
                if let Some(waiting) = state.waiting.pop_front() {
                    let _ = waiting.send(Err(error));
                }
            }
            ForkEvent::Exited { pid, status } => {
                if let Some(running) = state.running.remove(&pid) {
                    let _ = running.send(status);
                }
            }
        }
    };
    tracing::warn!("the worker fork server stopped: {why}");
    let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
    state.gone = Some(why);
    // Dropping the senders tells every waiting request and running worker.
    state.waiting.clear();
    state.running.clear();
}

/// The gateway's end of the socket, registered with the runtime.
#[allow(unsafe_code)]
fn register(socket: OwnedFd) -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: the `AsyncFd` owns the descriptor: it stays open, and is the same, until the
    // `AsyncFd` is dropped.
    unsafe { AsyncFd::register(socket) }.map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolweave_sandbox::Namespace;

    fn manifest(tools: &[&str]) -> Arc<Manifest> {
        Arc::new(Manifest {
            namespaces: vec![Namespace {
                name: "catalog".to_owned(),
                tools: Some(tools.iter().map(|tool| (*tool).to_owned()).collect()),
            }],
        })
    }

    #[test]
    fn a_manifest_goes_to_the_fork_server_once_and_an_equal_one_replaces_it_unsent() {
        let mut given = None;
        let first = manifest(&["add", "sub"]);
        assert!(must_give(&mut given, &first));
        assert!(given.is_none(), "forgotten until it has gone out");
        given = Some(first.clone());
        assert!(!must_give(&mut given, &first));
        // A new catalog of the same tools: not sent, and kept, so the next comparison is by
        // pointer.
        let same = manifest(&["add", "sub"]);
        assert!(!must_give(&mut given, &same));
        assert!(Arc::ptr_eq(given.as_ref().unwrap(), &same));
        let other = manifest(&["add"]);
        assert!(must_give(&mut given, &other));
        assert!(given.is_none());
    }
}
