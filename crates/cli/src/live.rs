//! A running gateway answers `toolweave tools`, `types`, `servers` and `doctor` for its config,
//! so that they need not start every server anew.
//!
//! `serve` listens on a Unix socket of its own, named by the config and settings files it was
//! started with, in a folder only its user may enter (`$XDG_RUNTIME_DIR/toolweave/gateways/`,
//! else under the user's cache folder); the socket is readable and writable by that user alone,
//! and each side checks that the other runs as the same user (`SO_PEERCRED`). One connection
//! carries one question and its answer, each a line of JSON of bounded size. The answers read
//! the gateway's state as it is; none starts, stops or waits for a server, nor calls a tool.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use toolweave_core::Gateway;

use crate::printed::Printed;

/// How long the command line waits for the running gateway's answer before it starts the
/// servers itself.
pub(crate) const ANSWER_WAIT: Duration = Duration::from_secs(2);

/// The largest question a gateway reads.
const MAX_QUESTION_BYTES: u64 = 64 * 1024;

/// The largest answer a gateway sends, and the command line reads.
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// Questions a gateway answers at once; more wait for their turn.
const MAX_CONNECTIONS: usize = 4;

/// How long a gateway gives one connection, question and answer.
const CONNECTION_TIME: Duration = Duration::from_secs(30);

/// What the command line asks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "ask", rename_all = "camelCase")]
pub(crate) enum Ask {
    /// `toolweave tools QUERY`.
    Tools {
        query: String,
        limit: usize,
        json: bool,
        python: bool,
    },
    /// `toolweave types`.
    Types { python: bool },
    /// Each server's state, for `toolweave servers` and `doctor`.
    Servers,
}

#[derive(Debug, Serialize, Deserialize)]
struct Question {
    /// The config, settings and flags the asker would start servers with (see
    /// [`fingerprint`]); a gateway started with others does not answer.
    fingerprint: String,
    ask: Ask,
}

/// A gateway's answer.
#[derive(Debug, Serialize, Deserialize)]
struct Answer {
    pid: u32,
    /// When it started serving, as `2026-11-29 20:51:03 UTC`.
    since: String,
    outcome: Outcome,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum Outcome {
    /// What the command prints.
    Printed(Printed),
    /// Each configured server's state, and the rules that match no tool (none when the
    /// settings name no tool).
    Servers {
        servers: Vec<LiveServer>,
        rules: Option<Vec<String>>,
    },
    /// Why the gateway does not answer this question.
    Declined { reason: String },
}

/// One upstream server as the running gateway holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct LiveServer {
    pub(crate) name: String,
    /// `ready`, `starting`, `failed` or `stopped`.
    pub(crate) state: String,
    pub(crate) tools: Option<usize>,
    /// Why it is not available, when it failed.
    pub(crate) error: Option<String>,
    pub(crate) instructions: Option<String>,
    /// Its tools held because their definitions changed since they were pinned.
    pub(crate) held: Vec<String>,
    /// Whether it failed for want of a login.
    pub(crate) needs_login: bool,
}

/// The running gateway that answered, for the line that says so.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub(crate) pid: u32,
    pub(crate) since: String,
}

impl Source {
    /// `from the running gateway (pid 12, serving since ...)`.
    pub(crate) fn line(&self) -> String {
        format!(
            "from the running gateway (pid {}, serving since {}); --fresh starts the servers anew",
            self.pid, self.since
        )
    }
}

/// What the running gateway said of its servers.
pub(crate) struct LiveServers {
    pub(crate) source: Source,
    pub(crate) servers: Vec<LiveServer>,
    pub(crate) rules: Option<Vec<String>>,
}

/// Which gateway answers: the files it was started with.
pub(crate) struct Key<'a> {
    /// `--config`, or none when the servers are discovered.
    pub(crate) config: Option<&'a Path>,
    /// `--settings`, or none for the default one.
    pub(crate) settings: Option<&'a Path>,
}

impl Key<'_> {
    /// The socket of the gateway started with these files; `None` when there is no folder for
    /// it (no runtime, cache or home folder) or its path is too long for a socket.
    fn endpoint(&self) -> Option<PathBuf> {
        let canonical =
            |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        let config = match self.config {
            Some(path) => format!("config {}", canonical(path).display()),
            // Discovery reads the current folder's project files.
            None => format!(
                "discovered in {}",
                canonical(&std::env::current_dir().ok()?).display()
            ),
        };
        let settings = match self.settings {
            Some(path) => Some(path.to_owned()),
            None => crate::rules::default_settings_path().filter(|path| path.is_file()),
        };
        let settings = settings
            .map(|path| canonical(&path).display().to_string())
            .unwrap_or_default();
        let name = hex(&Sha256::digest(format!("{config}\nsettings {settings}")))[..32].to_owned();
        let path = folder()?.join(format!("{name}.sock"));
        // sun_path holds 108 bytes, its terminating zero included.
        (path.as_os_str().len() < 108).then_some(path)
    }
}

/// What must be the same for a gateway to answer for a command: the servers as configured, the
/// settings with the flags added, and the result size bound.
pub(crate) fn fingerprint(
    config: &toolweave_config::Config,
    settings: &toolweave_config::Settings,
    max_result_bytes: usize,
) -> String {
    let servers = format!("{:?}\n{:?}", config.servers, config.disabled);
    hex(&Sha256::digest(format!(
        "{servers}\n{settings:?}\n{max_result_bytes}"
    )))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The folder the sockets are in, made and checked to be this user's alone; `None` when there
/// is none that is.
fn folder() -> Option<PathBuf> {
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
    };
    let base = env("XDG_RUNTIME_DIR")
        .or_else(|| env("XDG_CACHE_HOME"))
        .or_else(|| env("HOME").map(|home| home.join(".cache")))?;
    let folder = base.join("toolweave").join("gateways");
    own_folder(&folder).ok()?;
    Some(folder)
}

/// Makes `folder` (mode 0700) when missing; `Err` when it is not a folder of this user's that
/// only they may enter.
fn own_folder(folder: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    if !folder.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(folder)?;
    }
    let metadata = std::fs::symlink_metadata(folder)?;
    if !metadata.is_dir() || metadata.uid() != uid() {
        return Err(std::io::Error::other(format!(
            "{} is not a folder of this user's",
            folder.display()
        )));
    }
    if metadata.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

fn uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// A gateway's socket while it listens; removed when dropped.
#[derive(Debug)]
pub(crate) struct Published {
    path: PathBuf,
    /// The socket file's inode: a later gateway's socket at the same path is not removed.
    inode: u64,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Published {
    fn drop(&mut self) {
        use std::os::unix::fs::MetadataExt;
        self.task.abort();
        if std::fs::symlink_metadata(&self.path).is_ok_and(|metadata| metadata.ino() == self.inode)
        {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// What a gateway needs to answer.
pub(crate) struct Serving {
    pub(crate) gateway: Arc<Gateway>,
    pub(crate) fingerprint: String,
    /// The settings' identities with their rules, for the rules that match no tool.
    pub(crate) identities: Vec<(String, toolweave_config::Policy)>,
    /// Whether the settings name any tool (else there are no rules to check).
    pub(crate) has_rules: bool,
}

/// Listens for questions about `serving` at the socket `key` names, unless another gateway
/// answers there; `None` (logged) when there is no socket.
pub(crate) async fn publish(key: &Key<'_>, serving: Serving) -> Option<Published> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let path = key.endpoint()?;
    if path.exists() {
        if let Ok(Ok(_)) =
            tokio::time::timeout(Duration::from_millis(500), UnixStream::connect(&path)).await
        {
            tracing::info!(
                "another gateway with this config answers `toolweave tools`, `types`, `servers` and `doctor`"
            );
            return None;
        }
        let _ = std::fs::remove_file(&path);
    }
    let listener = match UnixListener::bind(&path) {
        Ok(listener) => listener,
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "cannot listen for `toolweave tools`, `types`, `servers` and `doctor`; they start the servers themselves");
            return None;
        }
    };
    let inode = match std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
        .and_then(|()| std::fs::symlink_metadata(&path))
    {
        Ok(metadata) => metadata.ino(),
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "cannot make the control socket owner-only; not listening");
            let _ = std::fs::remove_file(&path);
            return None;
        }
    };
    tracing::debug!(path = %path.display(), "answering `toolweave tools`, `types`, `servers` and `doctor`");
    let since = chrono::Utc::now()
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string();
    let task = tokio::spawn(listen(listener, Arc::new(serving), since));
    Some(Published { path, inode, task })
}

async fn listen(listener: UnixListener, serving: Arc<Serving>, since: String) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of file descriptors, say: try again a little later, not in a tight loop.
                tracing::debug!(%error, "the control socket could not accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let same_user = stream.peer_cred().is_ok_and(|peer| peer.uid() == uid());
        if !same_user {
            tracing::warn!("refused a connection to the control socket from another user");
            continue;
        }
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let serving = serving.clone();
        let since = since.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let answered = tokio::time::timeout(CONNECTION_TIME, answer(stream, &serving, since));
            if let Ok(Err(error)) = answered.await {
                tracing::debug!(%error, "a question on the control socket went unanswered");
            }
        });
    }
}

/// Reads one question from `stream` and writes its answer.
async fn answer(stream: UnixStream, serving: &Serving, since: String) -> Result<()> {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    tokio::io::BufReader::new(read.take(MAX_QUESTION_BYTES))
        .read_line(&mut line)
        .await?;
    let outcome = match serde_json::from_str::<Question>(&line) {
        Err(error) => Outcome::Declined {
            reason: format!("the question is not one this gateway reads ({error})"),
        },
        Ok(question) if question.fingerprint != serving.fingerprint => Outcome::Declined {
            reason: "it was started with another config, other settings or other flags".to_owned(),
        },
        Ok(question) => outcome(serving, question.ask).await,
    };
    let answer = Answer {
        pid: std::process::id(),
        since,
        outcome,
    };
    let mut bytes = serde_json::to_vec(&answer)?;
    if bytes.len() > MAX_ANSWER_BYTES {
        bytes = serde_json::to_vec(&Answer {
            outcome: Outcome::Declined {
                reason: format!(
                    "its answer is {} bytes, over the {MAX_ANSWER_BYTES} this socket carries",
                    bytes.len()
                ),
            },
            ..answer
        })?;
    }
    bytes.push(b'\n');
    write.write_all(&bytes).await?;
    write.shutdown().await?;
    Ok(())
}

/// A catalog that is still filling would answer `tools` and `types` with part of it: the
/// command then starts the servers itself, which waits for them.
fn still_starting(gateway: &Gateway) -> Option<Outcome> {
    let starting = gateway
        .upstream()
        .status()
        .into_iter()
        .find(|status| matches!(status.state, toolweave_upstream::ServerState::Starting))?;
    Some(Outcome::Declined {
        reason: format!("its server \"{}\" is still starting", starting.name),
    })
}

async fn outcome(serving: &Serving, ask: Ask) -> Outcome {
    let gateway = &serving.gateway;
    if matches!(ask, Ask::Tools { .. } | Ask::Types { .. })
        && let Some(declined) = still_starting(gateway)
    {
        return declined;
    }
    match ask {
        Ask::Tools {
            query,
            limit,
            json,
            python,
        } => {
            let question = crate::printed::ToolsQuestion {
                query,
                limit,
                json,
                python,
            };
            match crate::printed::tools_printed(gateway, &question, &serving.identities, false)
                .await
            {
                Ok(printed) => Outcome::Printed(printed),
                Err(error) => Outcome::Printed(Printed {
                    stdout: String::new(),
                    stderr: format!("toolweave: {error:#}\n"),
                }),
            }
        }
        Ask::Types { python } => Outcome::Printed(
            crate::printed::types_printed(gateway, crate::printed::flavor(python)).await,
        ),
        Ask::Servers => {
            let held = gateway.held();
            let servers = gateway
                .upstream()
                .status()
                .into_iter()
                .map(|status| LiveServer {
                    state: match status.state {
                        toolweave_upstream::ServerState::Starting => "starting",
                        toolweave_upstream::ServerState::Ready { .. } => "ready",
                        toolweave_upstream::ServerState::Failed { .. } => "failed",
                        toolweave_upstream::ServerState::Stopped => "stopped",
                    }
                    .to_owned(),
                    tools: status.tool_count(),
                    needs_login: matches!(
                        status.error(),
                        Some(toolweave_upstream::Error::LoginNeeded { .. })
                    ),
                    // `failed: <error>`, or `failing: <error>; 3 failures in a row, ...`.
                    error: status.error().is_some().then(|| {
                        let text = status.describe();
                        text.strip_prefix("failed: ")
                            .map_or_else(|| text.clone(), str::to_owned)
                    }),
                    held: held
                        .iter()
                        .filter(|tool| tool.server == status.name)
                        .map(|tool| tool.tool.clone())
                        .collect(),
                    instructions: status.instructions,
                    name: status.name,
                })
                .collect();
            let rules = if serving.has_rules {
                Some(gateway.unmatched_rules(&serving.identities, None).await)
            } else {
                None
            };
            Outcome::Servers { servers, rules }
        }
    }
}

/// Why the command line starts the servers itself after all, for the line that says so.
enum Fallback {
    /// No gateway listens for this config: nothing to say.
    Silent,
    /// Said on stderr.
    Said(String),
}

/// Asks the running gateway `key` names, if any. `Ok(None)`: start the servers (a line on
/// stderr says why when a gateway was there).
async fn ask(key: &Key<'_>, fingerprint: String, ask: Ask) -> Option<(Source, Outcome)> {
    let path = key.endpoint()?;
    if !path.exists() {
        return None;
    }
    let question = Question { fingerprint, ask };
    match tokio::time::timeout(ANSWER_WAIT, exchange(&path, &question)).await {
        Ok(Ok(answer)) => {
            let source = Source {
                pid: answer.pid,
                since: answer.since,
            };
            match answer.outcome {
                Outcome::Declined { reason } => {
                    say(Fallback::Said(format!(
                        "the running gateway for this config (pid {}) does not answer: {reason}",
                        source.pid
                    )));
                    None
                }
                outcome => Some((source, outcome)),
            }
        }
        Ok(Err(fallback)) => {
            say(fallback);
            None
        }
        Err(_elapsed) => {
            say(Fallback::Said(format!(
                "the running gateway for this config did not answer within {} s",
                ANSWER_WAIT.as_secs()
            )));
            None
        }
    }
}

fn say(fallback: Fallback) {
    if let Fallback::Said(why) = fallback {
        eprintln!("toolweave: {why}; starting the servers instead");
    }
}

/// Connects to the socket at `path`, asks `question` and reads the answer. A socket nobody
/// listens at is removed.
async fn exchange(path: &Path, question: &Question) -> Result<Answer, Fallback> {
    let stream = match UnixStream::connect(path).await {
        Ok(stream) => stream,
        Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => {
            // Left by a gateway that is gone.
            let _ = std::fs::remove_file(path);
            return Err(Fallback::Silent);
        }
        Err(error) => {
            return Err(Fallback::Said(format!(
                "cannot reach the running gateway at {} ({error})",
                path.display()
            )));
        }
    };
    match stream.peer_cred() {
        Ok(peer) if peer.uid() == uid() => {}
        _ => {
            return Err(Fallback::Said(format!(
                "{} is not a gateway of this user's",
                path.display()
            )));
        }
    }
    let unreadable = |error: &dyn std::fmt::Display| {
        Fallback::Said(format!(
            "the running gateway's answer could not be read ({error})"
        ))
    };
    let (read, mut write) = stream.into_split();
    let mut line = serde_json::to_vec(question).map_err(|error| unreadable(&error))?;
    line.push(b'\n');
    write
        .write_all(&line)
        .await
        .map_err(|error| unreadable(&error))?;
    let mut bytes = Vec::new();
    read.take(MAX_ANSWER_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(|error| unreadable(&error))?;
    if bytes.len() > MAX_ANSWER_BYTES {
        return Err(Fallback::Said(format!(
            "the running gateway's answer is over {MAX_ANSWER_BYTES} bytes"
        )));
    }
    serde_json::from_slice(&bytes).map_err(|error| unreadable(&error))
}

/// What the running gateway prints for `ask`, with the line that says it answered; `None`
/// when the servers are to be started instead.
pub(crate) async fn ask_printed(
    key: &Key<'_>,
    fingerprint: String,
    question: Ask,
) -> Option<(Source, Printed)> {
    match ask(key, fingerprint, question).await? {
        (source, Outcome::Printed(printed)) => Some((source, printed)),
        (source, _) => {
            say(Fallback::Said(format!(
                "the running gateway (pid {}) answered another question",
                source.pid
            )));
            None
        }
    }
}

/// Each server's state as the running gateway holds it; `None` when the servers are to be
/// started instead.
pub(crate) async fn ask_servers(key: &Key<'_>, fingerprint: String) -> Option<LiveServers> {
    match ask(key, fingerprint, Ask::Servers).await? {
        (source, Outcome::Servers { servers, rules }) => Some(LiveServers {
            source,
            servers,
            rules,
        }),
        (source, _) => {
            say(Fallback::Said(format!(
                "the running gateway (pid {}) answered another question",
                source.pid
            )));
            None
        }
    }
}
