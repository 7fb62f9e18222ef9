//! A stdio server's process: spawned with its stdin/stdout as the MCP channel and its stderr read
//! into the log and a short tail, waited on, and stopped. [`crate::run`] drives it.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rmcp::ClientServiceExt;
use rmcp::service::ClientInitializeError;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use toolweave_config::{Network, ServerConfig, Transport};

use crate::Error;
use crate::bounded::{BoundedLines, MAX_MESSAGE_BYTES, StdoutFindings};
use crate::client::UpstreamClient;
use crate::decode::Method;
use crate::handshake::{Handshake, StartFailure, lifecycle, list_tools};
use crate::lines::LineTransport;
use crate::stderr::{self, StderrTail, read_lines};
use crate::wire::Wire;

/// After a failed handshake, how long to wait for the process to exit, to report its status.
const FAILED_START_EXIT_WAIT: Duration = Duration::from_millis(500);
/// How long to wait for the rest of stderr once the process has exited.
const STDERR_DRAIN: Duration = Duration::from_millis(500);

/// A spawned child with its stderr being read.
pub(crate) struct Process {
    child: Child,
    stderr_reader: JoinHandle<()>,
    tail: StderrTail,
    /// What its stdout carried besides messages: a line too long, lines that are not MCP (see
    /// `bounded`).
    stdout: Arc<StdoutFindings>,
    /// Its box's private home folder (removed when the process is dropped) and proxy.
    _boxed: Option<BoxedParts>,
}

/// What a boxed process holds on to while it runs.
struct BoxedParts {
    _home: tempfile::TempDir,
    proxy: Option<JoinHandle<()>>,
}

impl Drop for BoxedParts {
    fn drop(&mut self) {
        if let Some(proxy) = &self.proxy {
            proxy.abort();
        }
    }
}

impl Process {
    /// Waits for the process to exit; its status in words.
    pub(crate) async fn wait(&mut self) -> String {
        describe_status(self.child.wait().await)
    }

    /// Its process id while it runs.
    pub(crate) fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Waits (briefly) for the stderr reader to reach the end, then returns the tail.
    pub(crate) async fn stderr(&mut self) -> String {
        let _ = tokio::time::timeout(STDERR_DRAIN, &mut self.stderr_reader).await;
        self.tail.text()
    }

    /// Gives the process `grace` to exit by itself, then kills it. `None` when it was killed.
    pub(crate) async fn end(&mut self, grace: Duration) -> Option<String> {
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

    /// The handshake failed. When its connection closed, the process has usually exited, and
    /// its status says more; otherwise the failure says what went wrong, and the process is
    /// stopped (its exit then, when its input closes, is no news).
    pub(crate) async fn start_failed(&mut self, server: String, failure: StartFailure) -> Error {
        if !failure.connection_closed {
            self.end(Duration::ZERO).await;
            return Error::StartFailed {
                server,
                message: failure.message,
                stderr: self.stderr().await,
            };
        }
        match self.end(FAILED_START_EXIT_WAIT).await {
            Some(status) => Error::ExitedDuringStartup {
                server,
                status,
                stderr: self.stderr().await,
            },
            None => Error::StartFailed {
                server,
                message: failure.message,
                stderr: self.stderr().await,
            },
        }
    }

    /// `error`, a failed start, told again with the first line on stdout that was not an MCP
    /// message, when there was one: such lines (logs, a banner, a server in some other mode) are
    /// the likely cause, and the transport skips them without a word.
    pub(crate) fn explain_start(&self, error: Error) -> Error {
        let Some(first_line) = self.stdout.first_stray_line() else {
            return error;
        };
        match error.into_failed_start() {
            Ok((server, outcome, stderr)) => Error::NotMcpOnStdout {
                server,
                outcome,
                first_line: first_line.to_owned(),
                stderr,
            },
            Err(other) => other,
        }
    }

    /// Its MCP connection (stdout) closed after it was ready: it is stopped, and the error says
    /// how it ended.
    pub(crate) async fn closed(&mut self, server: String, grace: Duration) -> Error {
        let status = self.end(grace).await;
        let status = if self.stdout.oversized() {
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
        Error::Exited {
            server,
            status,
            stderr: self.stderr().await,
            during_call: false,
        }
    }
}

/// Spawns a stdio server's process (in its box, when its entry has one): the process, and the
/// handshake to run under the startup timeout.
pub(crate) fn spawn(
    config: &ServerConfig,
    client: UpstreamClient,
    wire: Arc<Wire>,
) -> Result<(Process, Handshake), Error> {
    let name = config.name.clone();
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
        sandbox,
        ..
    } = &config.transport
    else {
        return Err(Error::Spawn {
            server: name,
            command: String::new(),
            message: "it is not a stdio server".to_owned(),
        });
    };
    let mut command_line = command_line(&name, command, args, cwd.as_deref())?;
    let (home, handback) = match sandbox {
        Some(sandbox) => {
            let (home, handback) = put_in_box(&mut command_line, config, sandbox)?;
            (Some(home), handback)
        }
        // Added to the inherited environment, as MCP clients do.
        None => {
            command_line.envs(env.iter().map(|(key, value)| (key, value.value())));
            (None, None)
        }
    };
    let spawned = command_line.spawn();
    // The child has entered its box (or failed to): the copies of the box's descriptors the
    // command holds are closed, so a handback that never comes reads as its end.
    drop(command_line);
    let mut child = spawned.map_err(|error| match &home {
        Some(_) => box_error(&name, command, &error),
        None => spawn_error(&name, command, cwd.as_deref(), &error),
    })?;
    let boxed = match home {
        Some(home) => Some(BoxedParts {
            proxy: start_proxy(config, handback).map_err(|message| Error::Spawn {
                server: name.clone(),
                command: command.clone(),
                message,
            })?,
            _home: home,
        }),
        None => None,
    };
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        // All three were asked to be piped just above.
        return Err(Error::Spawn {
            server: name,
            command: command.clone(),
            message: "its standard streams could not be connected".to_owned(),
        });
    };
    let tail = stderr::tail();
    let stderr_reader = tokio::spawn(read_lines(name.clone(), stderr, tail.clone()));
    let stdout_findings = Arc::new(StdoutFindings::default());
    tracing::debug!(server = %name, process_id = ?child.id(), "started the server's process");
    // The bound is enforced by the reader, which ends the connection (see `bounded`).
    let transport = LineTransport::new(
        BoundedLines::new(stdout, MAX_MESSAGE_BYTES, &name, stdout_findings.clone()),
        stdin,
        wire.clone(),
    );
    let handshake: Handshake = Box::pin(async move {
        let service = client
            .serve_with_lifecycle(transport, lifecycle())
            .await
            .map_err(|error| describe_initialize_error(error, &wire))?;
        list_tools(service, &wire).await
    });
    let process = Process {
        child,
        stderr_reader,
        tail,
        stdout: stdout_findings,
        _boxed: boxed,
    };
    Ok((process, handshake))
}

/// The command that starts a stdio server: its arguments, piped standard streams, its `cwd`.
fn command_line(
    name: &str,
    command: &str,
    args: &[toolweave_config::Expanded],
    cwd: Option<&Path>,
) -> Result<Command, Error> {
    let mut command_line = Command::new(command);
    command_line
        .args(args.iter().map(|arg| arg.value()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // Captured: the child's stderr must not mix into ours (or into a terminal UI).
        .stderr(Stdio::piped())
        // If this task is dropped without finishing (runtime shut down), the child dies with it.
        .kill_on_drop(true);
    if let Some(cwd) = cwd {
        if !cwd.is_dir() {
            return Err(Error::Spawn {
                server: name.to_owned(),
                command: command.to_owned(),
                message: format!(
                    "the working directory {} does not exist; check \"cwd\" in the config file (a relative \"cwd\" is relative to the config file's folder)",
                    cwd.display()
                ),
            });
        }
        command_line.current_dir(cwd);
    }
    Ok(command_line)
}

/// Prepares `entry`'s box and has the command enter it: the box's private home folder, and the
/// descriptor its proxy listener comes back over (when it may reach hosts).
fn put_in_box(
    command_line: &mut Command,
    config: &ServerConfig,
    sandbox: &toolweave_config::Sandbox,
) -> Result<(tempfile::TempDir, Option<std::os::fd::OwnedFd>), Error> {
    let name = &config.name;
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
        ..
    } = &config.transport
    else {
        return Err(Error::Spawn {
            server: name.clone(),
            command: String::new(),
            message: "it is not a stdio server".to_owned(),
        });
    };
    let entry = &crate::boxing::Entry {
        command,
        args,
        env,
        cwd: cwd.as_deref(),
        sandbox,
    };
    let crate::boxing::Boxing {
        mut prepared,
        home,
        environment,
    } = crate::boxing::prepare(entry).map_err(|message| Error::Spawn {
        server: name.to_owned(),
        command: entry.command.to_owned(),
        message,
    })?;
    command_line.env_clear().envs(&environment);
    let handback = prepared.take_handback();
    if !prepared.confines_files() {
        tracing::warn!(
            server = %name,
            "SANDBOX WEAKER THAN USUAL: this kernel has no Landlock, so the server's box keeps \
             its environment and network but not its files"
        );
    }
    enter_box_in_child(command_line, prepared);
    Ok((home, handback))
}

/// Has the child enter its box between `fork` and `exec`.
#[allow(unsafe_code)]
fn enter_box_in_child(
    command_line: &mut Command,
    prepared: toolweave_process::server_box::Prepared,
) {
    // SAFETY: `enter` makes system calls only, on memory prepared before the fork (no
    // allocation, no lock), which is what code between fork and exec may do.
    unsafe {
        command_line.pre_exec(move || prepared.enter());
    }
}

/// Serves the box's proxy on the listener the child handed back, when its entry lists hosts.
fn start_proxy(
    config: &ServerConfig,
    handback: Option<std::os::fd::OwnedFd>,
) -> Result<Option<JoinHandle<()>>, String> {
    let (
        Some(handback),
        Transport::Stdio {
            sandbox: Some(sandbox),
            ..
        },
    ) = (handback, &config.transport)
    else {
        return Ok(None);
    };
    let Network::Hosts(hosts) = &sandbox.network else {
        return Ok(None);
    };
    let listener = toolweave_process::server_box::receive_descriptor(&handback)
        .map_err(|error| format!("its box's proxy listener did not arrive: {error}"))?;
    let listener = std::net::TcpListener::from(listener);
    listener
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpListener::from_std(listener))
        .map(|listener| {
            let allowed = crate::proxy::Allowed {
                server: config.name.clone(),
                key: format!("{} in {}", sandbox.key_of("network"), sandbox.place),
                hosts: hosts.clone(),
            };
            Some(tokio::spawn(crate::proxy::serve(
                listener,
                Arc::new(allowed),
            )))
        })
        .map_err(|error| format!("its box's proxy cannot listen: {error}"))
}

/// The child could not enter its box, or run its command once inside.
fn box_error(server: &str, command: &str, error: &std::io::Error) -> Error {
    Error::Spawn {
        server: server.to_owned(),
        command: command.to_owned(),
        message: format!(
            "it could not be started in its box (\"sandbox\" in its entry): {error}. The box needs \
             network namespaces (root, or unprivileged user namespaces) and sees only what the \
             entry grants: check that \"command\" is inside the system's folders, its install, its \
             \"cwd\" or a path in \"sandbox\".\"read\"; `toolweave doctor` shows what this \
             machine supports"
        ),
    }
}

/// What became of a command that could not be started for "no such file".
enum Lookup {
    /// The file is there: what is missing is what the kernel needs to run it.
    Found(PathBuf),
    /// It is not; the end of the error's sentence says where it was looked for.
    Missing(String),
}

/// Looks `command` up as the spawn did: a bare name on PATH (toolweave's own PATH; an entry whose
/// `env` changes PATH is looked up there by the spawn, so this is a diagnosis, not a guarantee),
/// a relative path from `cwd` or the directory toolweave was started in, an absolute path as is.
fn look_up(command: &str, cwd: Option<&Path>) -> Lookup {
    if !command.contains('/') {
        let found = std::env::var_os("PATH").and_then(|search| {
            std::env::split_paths(&search)
                .map(|dir| dir.join(command))
                .find(|path| path.is_file())
        });
        return found.map_or_else(|| Lookup::Missing(" on PATH".to_owned()), Lookup::Found);
    }
    let path = match cwd {
        Some(cwd) => cwd.join(command),
        None => PathBuf::from(command),
    };
    if path.is_file() {
        return Lookup::Found(path);
    }
    if Path::new(command).is_absolute() {
        return Lookup::Missing(String::new());
    }
    Lookup::Missing(match cwd {
        Some(cwd) => format!(
            " in {} (a relative \"command\" is taken from the entry's \"cwd\")",
            cwd.display()
        ),
        None => match std::env::current_dir() {
            Ok(here) => format!(
                " in {} (a relative \"command\" is taken from the directory toolweave was started in; give a full path, or a \"cwd\")",
                here.display()
            ),
            Err(_) => String::new(),
        },
    })
}

/// Why a file that exists could not be started with "no such file": the interpreter its `#!`
/// line names, or an executable's dynamic loader, is missing.
fn missing_interpreter(path: &Path) -> String {
    use std::io::Read;
    let mut start = [0u8; 256];
    let read = std::fs::File::open(path)
        .and_then(|mut file| file.read(&mut start))
        .unwrap_or(0);
    let start = &start[..read];
    if let Some(line) = start.strip_prefix(b"#!") {
        let end = line
            .iter()
            .position(|&byte| byte == b'\n')
            .unwrap_or(line.len());
        let interpreter = String::from_utf8_lossy(&line[..end]);
        format!(
            "{} exists, but the interpreter its first line names (#!{}) was not found; install it, or change that line",
            path.display(),
            interpreter.trim()
        )
    } else if start.starts_with(b"\x7fELF") {
        format!(
            "{} exists, but its dynamic loader was not found: it was probably built for another system (another C library or processor); use a build for this one",
            path.display()
        )
    } else {
        format!(
            "{} exists, but the system could not run it (no such file or directory)",
            path.display()
        )
    }
}

fn spawn_error(server: &str, command: &str, cwd: Option<&Path>, error: &std::io::Error) -> Error {
    match error.kind() {
        std::io::ErrorKind::NotFound => match look_up(command, cwd) {
            Lookup::Found(path) => Error::Spawn {
                server: server.to_owned(),
                command: command.to_owned(),
                message: missing_interpreter(&path),
            },
            Lookup::Missing(place) => Error::CommandNotFound {
                server: server.to_owned(),
                command: command.to_owned(),
                place,
            },
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

fn describe_initialize_error(error: ClientInitializeError, wire: &Wire) -> StartFailure {
    if let Some(malformed) = wire.take_unreadable_answer_to(Method::Initialize) {
        return StartFailure::protocol(format!(
            "its answer to initialize cannot be read: {malformed}"
        ));
    }
    match error {
        // `server/discover` failed, then `initialize`: the second failure is the one to name.
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            describe_initialize_error(*fallback, wire)
        }
        ClientInitializeError::ConnectionClosed(_) => StartFailure {
            message: "it closed the connection before answering initialize".to_owned(),
            connection_closed: true,
            needs_login: false,
        },
        ClientInitializeError::JsonRpcError(data) => StartFailure::protocol(format!(
            "it answered initialize with an error: {}",
            data.message
        )),
        other => StartFailure {
            message: format!("initialize failed: {other}"),
            connection_closed: matches!(other, ClientInitializeError::TransportError { .. }),
            needs_login: false,
        },
    }
}

fn describe_status(status: std::io::Result<ExitStatus>) -> String {
    match status {
        Ok(status) => status.to_string(),
        Err(error) => format!("exit status unknown: {error}"),
    }
}
