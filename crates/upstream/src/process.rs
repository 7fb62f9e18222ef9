//! One run of one stdio server: spawn the process, complete the MCP handshake and `tools/list`,
//! serve until the process exits, the connection closes or toolweave shuts down, then report how
//! it ended. The task owns the child, so it is the one place that waits on it and kills it.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::ServiceExt;
use rmcp::model::Tool;
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use toolweave_config::Transport;

use crate::Error;
use crate::bounded::{BoundedLines, MAX_MESSAGE_BYTES};
use crate::client::UpstreamClient;
use crate::manager::{Ending, Shared};
use crate::stderr::{StderrTail, read_lines};

/// How long a process may take to exit by itself once its stdin is closed, before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(1);
/// After a failed handshake, how long to wait for the process to exit, to report its status.
const FAILED_START_EXIT_WAIT: Duration = Duration::from_millis(500);
/// How long to wait for the rest of stderr once the process has exited.
const STDERR_DRAIN: Duration = Duration::from_millis(500);

/// Runs run number `run` of server `index` to its end and records how it ended.
pub(crate) async fn supervise(shared: Arc<Shared>, index: usize, run: u32) {
    let ending = run_server(&shared, index, run).await;
    if let (Some(server), Ending::Failed { error, .. }) = (shared.servers.get(index), &ending) {
        tracing::warn!(server = %server.config.name, "{error}");
    }
    shared.finish(index, run, ending);
}

/// A spawned child with its stderr being read.
struct Process {
    child: Child,
    stderr_reader: JoinHandle<()>,
    tail: StderrTail,
}

impl Process {
    /// Waits (briefly) for the stderr reader to reach the end, then returns the tail.
    async fn stderr(&mut self) -> String {
        let _ = tokio::time::timeout(STDERR_DRAIN, &mut self.stderr_reader).await;
        self.tail.text()
    }

    /// Gives the process `grace` to exit by itself, then kills it. `None` when it was killed.
    async fn end(&mut self, grace: Duration) -> Option<String> {
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(status) => Some(describe_status(status)),
            Err(_elapsed) => {
                if let Err(error) = self.child.kill().await {
                    tracing::warn!(%error, "killing an upstream server's process failed");
                }
                None
            }
        }
    }
}

enum Start {
    Ready(RunningService<RoleClient, UpstreamClient>, Vec<Tool>),
    Failed(String),
    TimedOut,
    Exited(std::io::Result<ExitStatus>),
    Shutdown,
}

enum Served {
    Shutdown,
    Exited(std::io::Result<ExitStatus>),
    ConnectionClosed,
}

async fn run_server(shared: &Arc<Shared>, index: usize, run: u32) -> Ending {
    let Some(server) = shared.servers.get(index) else {
        return Ending::Stopped;
    };
    let name = server.config.name.clone();
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &server.config.transport
    else {
        // Remote entries never get a task; nothing to run.
        return Ending::Stopped;
    };
    let started = Instant::now();
    let mut command_line = Command::new(command);
    command_line
        .args(args)
        // Added to the inherited environment, as MCP clients do.
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // Captured: the child's stderr must not mix into ours (or into a terminal UI).
        .stderr(Stdio::piped())
        // If this task is dropped without finishing (runtime shut down), the child dies with it.
        .kill_on_drop(true);
    if let Some(cwd) = cwd {
        if !cwd.is_dir() {
            return failed(Error::Spawn {
                server: name,
                command: command.clone(),
                message: format!(
                    "the working directory {} does not exist; check \"cwd\" in the config file (a relative \"cwd\" is relative to the config file's folder)",
                    cwd.display()
                ),
            });
        }
        command_line.current_dir(cwd);
    }
    let mut child = match command_line.spawn() {
        Ok(child) => child,
        Err(error) => return failed(spawn_error(&name, command, cwd.as_deref(), &error)),
    };
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        // All three were asked to be piped just above.
        return failed(Error::Spawn {
            server: name,
            command: command.clone(),
            message: "its standard streams could not be connected".to_owned(),
        });
    };
    let tail = StderrTail::default();
    let stderr_reader = tokio::spawn(read_lines(name.clone(), stderr, tail.clone()));
    let mut process = Process {
        child,
        stderr_reader,
        tail,
    };
    tracing::debug!(server = %name, process_id = ?process.child.id(), "started the server's process");

    let client = UpstreamClient::new(name.clone(), server.tools_changed.clone());
    let oversized = Arc::new(AtomicBool::new(false));
    // The bound is enforced by the reader, which ends the connection (see `bounded`).
    let transport = AsyncRwTransport::new_client(
        BoundedLines::new(stdout, MAX_MESSAGE_BYTES, oversized.clone()),
        stdin,
    )
    .with_max_line_length(usize::MAX);
    let handshake = async move {
        let service = client
            .serve(transport)
            .await
            .map_err(describe_initialize_error)?;
        let tools = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|error| format!("its tools/list failed: {error}"))?;
        Ok::<_, String>((service, tools))
    };
    let limit = shared.options.startup_timeout;
    let start = tokio::select! {
        biased;
        () = shared.shutdown.cancelled() => Start::Shutdown,
        status = process.child.wait() => Start::Exited(status),
        result = tokio::time::timeout(limit, handshake) => match result {
            Err(_elapsed) => Start::TimedOut,
            Ok(Err(message)) => Start::Failed(message),
            Ok(Ok((service, tools))) => Start::Ready(service, tools),
        },
    };

    let (service, tools) = match start {
        Start::Ready(service, tools) => (service, tools),
        Start::Shutdown => {
            process.end(Duration::ZERO).await;
            return Ending::Stopped;
        }
        Start::Exited(status) => {
            return failed(Error::ExitedDuringStartup {
                server: name,
                status: describe_status(status),
                stderr: process.stderr().await,
            });
        }
        Start::Failed(message) => {
            // A handshake usually fails because the process exited: then its status says more.
            let error = match process.end(FAILED_START_EXIT_WAIT).await {
                Some(status) => Error::ExitedDuringStartup {
                    server: name,
                    status,
                    stderr: process.stderr().await,
                },
                None => Error::StartFailed {
                    server: name,
                    message,
                    stderr: process.stderr().await,
                },
            };
            return failed(error);
        }
        Start::TimedOut => {
            process.end(Duration::ZERO).await;
            return failed(Error::StartTimeout {
                server: name,
                limit,
                stderr: process.stderr().await,
            });
        }
    };

    let peer = service.peer().clone();
    let stop_service = service.cancellation_token();
    tracing::info!(
        server = %name,
        tools = tools.len(),
        elapsed_ms = started.elapsed().as_millis(),
        "upstream server ready"
    );
    shared.set_ready(index, run, peer.clone(), tools, process.child.id());
    let ready_at = Instant::now();
    let service_done = service.waiting();
    tokio::pin!(service_done);
    let served = loop {
        tokio::select! {
            biased;
            () = shared.shutdown.cancelled() => break Served::Shutdown,
            status = process.child.wait() => break Served::Exited(status),
            _ = &mut service_done => break Served::ConnectionClosed,
            () = server.tools_changed.notified() => {
                match tokio::time::timeout(shared.options.call_timeout, peer.list_all_tools()).await {
                    Ok(Ok(tools)) => {
                        tracing::info!(server = %name, tools = tools.len(), "upstream tool list changed");
                        shared.set_tools(index, run, tools);
                    }
                    Ok(Err(error)) => {
                        tracing::warn!(server = %name, %error, "listing tools again after a change failed");
                    }
                    Err(_elapsed) => {
                        tracing::warn!(server = %name, "listing tools again after a change timed out");
                    }
                }
            }
        }
    };
    let uptime = Some(ready_at.elapsed());
    match served {
        Served::Shutdown => {
            // Graceful first: closing the connection closes the child's stdin, and MCP servers
            // exit when their stdin ends. Whatever is still running after the grace is killed.
            stop_service.cancel();
            let _ = tokio::time::timeout(EXIT_GRACE, &mut service_done).await;
            if process.end(EXIT_GRACE).await.is_none() {
                tracing::debug!(server = %name, "killed the server's process at shutdown");
            }
            Ending::Stopped
        }
        Served::Exited(status) => {
            stop_service.cancel();
            Ending::Failed {
                error: Error::Exited {
                    server: name,
                    status: describe_status(status),
                    stderr: process.stderr().await,
                    during_call: false,
                },
                uptime,
            }
        }
        Served::ConnectionClosed => {
            let status = process.end(EXIT_GRACE).await;
            let status = if oversized.load(Ordering::Relaxed) {
                format!(
                    "it sent a message longer than {} MiB, which toolweave does not accept (a tool \
                     result that large: ask the tool for less); its connection was closed and it \
                     was stopped",
                    MAX_MESSAGE_BYTES / (1024 * 1024)
                )
            } else {
                status.unwrap_or_else(|| {
                    "it closed its MCP connection (stdout) and was stopped".to_owned()
                })
            };
            Ending::Failed {
                error: Error::Exited {
                    server: name,
                    status,
                    stderr: process.stderr().await,
                    during_call: false,
                },
                uptime,
            }
        }
    }
}

fn failed(error: Error) -> Ending {
    Ending::Failed {
        error,
        uptime: None,
    }
}

fn spawn_error(server: &str, command: &str, cwd: Option<&Path>, error: &std::io::Error) -> Error {
    match error.kind() {
        std::io::ErrorKind::NotFound => Error::CommandNotFound {
            server: server.to_owned(),
            command: command.to_owned(),
        },
        std::io::ErrorKind::PermissionDenied => Error::Spawn {
            server: server.to_owned(),
            command: command.to_owned(),
            message: format!(
                "permission denied ({error}); check that \"command\" is an executable file{}",
                cwd.map(|cwd| format!(" and that {} may be entered", cwd.display()))
                    .unwrap_or_default()
            ),
        },
        _ => Error::Spawn {
            server: server.to_owned(),
            command: command.to_owned(),
            message: format!("{error}; check \"command\" and \"args\" in the config file"),
        },
    }
}

fn describe_initialize_error(error: ClientInitializeError) -> String {
    match error {
        ClientInitializeError::ConnectionClosed(_) => {
            "it closed the connection before answering initialize".to_owned()
        }
        ClientInitializeError::JsonRpcError(data) => {
            format!("it answered initialize with an error: {}", data.message)
        }
        other => format!("initialize failed: {other}"),
    }
}

fn describe_status(status: std::io::Result<ExitStatus>) -> String {
    match status {
        Ok(status) => status.to_string(),
        Err(error) => format!("exit status unknown: {error}"),
    }
}
