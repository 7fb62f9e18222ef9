//! Drives the real `toolweave` binary over stdio with an MCP client, as a user's client would.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, Result, bail};
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Map, Value, json};

/// The longest a test waits for the answer to one `tools/call`: far past any limit a test sets,
/// so that a gateway that died with the request in flight fails the test instead of hanging it.
const ANSWER_BOUND: std::time::Duration = std::time::Duration::from_secs(300);

/// Returns once process `process_id` has exited (it is gone, or a zombie its parent has not
/// reaped); never when there is no process to watch. Checked twice a second, from `/proc`.
async fn exited(process_id: Option<u32>) {
    let Some(process_id) = process_id else {
        return std::future::pending().await;
    };
    let stat = format!("/proc/{process_id}/stat");
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        match std::fs::read_to_string(&stat) {
            // The state follows the command name, which is in parentheses.
            Ok(text) => {
                let state = text
                    .rsplit_once(") ")
                    .and_then(|(_, rest)| rest.chars().next());
                if matches!(state, Some('Z' | 'X')) {
                    return;
                }
            }
            Err(_) => return,
        }
    }
}

/// A configuration folder of its own for one toolweave a test starts, to give it as
/// `XDG_CONFIG_HOME`: what toolweave keeps of the user's (its settings, trusted servers, pinned
/// tool definitions, logins) is then the test's alone, and never the real user's. Each call
/// makes a new, empty one, in a folder of this test process that is emptied when the process
/// first asks (under the build's `target/tmp`, else the system's temporary folder).
pub fn config_home() -> PathBuf {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    static BASE: OnceLock<PathBuf> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = BASE.get_or_init(|| {
        // Tests run from target/<profile>/deps; target/tmp is cargo's folder for test files.
        let target_tmp = std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.ancestors().nth(3)?.join("tmp")))
            .filter(|folder| folder.is_dir());
        let base = target_tmp
            .unwrap_or_else(std::env::temp_dir)
            .join(format!("toolweave-config-{}", std::process::id()));
        // A folder left by an earlier process with this id must not lend its files.
        let _ = std::fs::remove_dir_all(&base);
        base
    });
    let folder = base.join(NEXT.fetch_add(1, Ordering::Relaxed).to_string());
    // A folder that cannot be made fails the toolweave that is given it, naming it.
    let _ = std::fs::create_dir_all(&folder);
    folder
}

/// Gives `command` a configuration folder of its own ([`config_home`]) unless `env` names one.
fn isolate(command: &mut tokio::process::Command, env: &[(&str, &str)]) {
    if !env.iter().any(|(name, _)| *name == "XDG_CONFIG_HOME") {
        command.env("XDG_CONFIG_HOME", config_home());
    }
}

/// A running `toolweave serve` and an initialized MCP session with it.
pub struct Toolweave {
    client: RunningService<RoleClient, ()>,
    process_id: Option<u32>,
}

/// Spawns `binary serve --config config <extra>` with `env` added (and a configuration folder
/// of its own unless `env` names one: [`config_home`]), and completes `initialize`
/// with `handler` as the client (one that answers elicitation, or keeps notifications); the
/// session and the process id.
pub async fn serve_with<H: ClientHandler>(
    binary: &Path,
    config: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
    handler: H,
) -> Result<(RunningService<RoleClient, H>, Option<u32>)> {
    let command = tokio::process::Command::new(binary).configure(|command| {
        command.arg("serve").arg("--config").arg(config).args(extra);
        command.env("TOOLWEAVE_LOG", "warn");
        isolate(command, env);
        command.envs(env.iter().copied());
    });
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::inherit())
        .spawn()
        .context("spawning toolweave serve")?;
    let process_id = transport.id();
    let client = handler.serve(transport).await.context("initialize")?;
    Ok((client, process_id))
}

impl Toolweave {
    /// Spawns `binary serve --config config <extra>` and completes `initialize`.
    pub async fn start(binary: &Path, config: &Path, extra: &[&str]) -> Result<Self> {
        Self::start_with_env(binary, config, extra, &[]).await
    }

    /// [`Toolweave::start`] with `env` added to the process's environment (for `${VAR}`s in the
    /// config).
    pub async fn start_with_env(
        binary: &Path,
        config: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Self> {
        let (client, process_id) = serve_with(binary, config, extra, env, ()).await?;
        Ok(Self { client, process_id })
    }

    /// A session with a client already connected (over any transport).
    pub fn from_client(client: RunningService<RoleClient, ()>, process_id: Option<u32>) -> Self {
        Self { client, process_id }
    }

    /// The process id of `toolweave serve`.
    pub fn process_id(&self) -> Option<u32> {
        self.process_id
    }

    /// The session, for requests the helpers below do not cover.
    pub fn client(&self) -> &RunningService<RoleClient, ()> {
        &self.client
    }

    /// `tools/list`.
    pub async fn list_tools(&self) -> Result<Vec<Tool>> {
        Ok(self.client.list_all_tools().await?)
    }

    /// `tools/call` with any arguments.
    pub async fn call(&self, tool: &str, arguments: Value) -> Result<CallToolResult> {
        let Value::Object(arguments) = arguments else {
            bail!("arguments must be an object");
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let answer = tokio::time::timeout(ANSWER_BOUND, self.client.call_tool(params));
        tokio::select! {
            answer = answer => match answer {
                Ok(answer) => Ok(answer?),
                Err(_) => bail!(
                    "no answer to tools/call {tool} within {} s: has the gateway exited?",
                    ANSWER_BOUND.as_secs()
                ),
            },
            () = exited(self.process_id) => {
                bail!("the gateway exited while tools/call {tool} waited for its answer")
            }
        }
    }

    /// `execute_code` with the given language.
    pub async fn execute(&self, code: &str, language: &str) -> Result<Execution> {
        let result = self
            .call(
                "execute_code",
                json!({ "code": code, "language": language }),
            )
            .await?;
        Execution::from_result(result)
    }

    /// Ends the session and waits for the process to exit.
    pub async fn stop(self) -> Result<()> {
        self.client.cancel().await?;
        Ok(())
    }
}

/// An `execute_code` answer, taken apart.
#[derive(Debug, Clone)]
pub struct Execution {
    /// `isError`.
    pub is_error: bool,
    /// The text content.
    pub text: String,
    /// `structuredContent`.
    pub structured: Value,
    /// The content after the first item (the blocks code emitted or returned), each as
    /// [`block_summary`] writes it.
    pub blocks: Vec<String>,
}

/// A content block in a line: `image image/png 68` (type, media type, decoded bytes) for images
/// and audio, `text <text>`, `resource_link <uri>`.
pub fn block_summary(block: &rmcp::model::ContentBlock) -> String {
    use base64::Engine as _;
    use rmcp::model::ContentBlock;
    let bytes = |data: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_or_else(
                |error| format!("(not base64: {error})"),
                |bytes| bytes.len().to_string(),
            )
    };
    match block {
        ContentBlock::Image(image) => format!("image {} {}", image.mime_type, bytes(&image.data)),
        ContentBlock::Audio(audio) => format!("audio {} {}", audio.mime_type, bytes(&audio.data)),
        ContentBlock::Text(text) => format!("text {}", text.text),
        ContentBlock::ResourceLink(link) => format!("resource_link {}", link.uri),
        other => format!("{other:?}"),
    }
}

impl Execution {
    pub fn from_result(result: CallToolResult) -> Result<Self> {
        let text = result
            .content
            .iter()
            .filter_map(|item| item.as_text().map(|text| text.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        Ok(Self {
            is_error: result.is_error == Some(true),
            text,
            structured: result.structured_content.unwrap_or(Value::Null),
            blocks: result.content.iter().skip(1).map(block_summary).collect(),
        })
    }

    /// The program's value; fails with the message when the execution failed.
    pub fn value(&self) -> Result<&Value> {
        if self.is_error {
            bail!("execution failed: {}", self.text);
        }
        Ok(&self.structured["result"])
    }

    /// The error kind (`Timeout`, `GuestError`, ...) of a failed execution.
    pub fn error_kind(&self) -> Option<&str> {
        self.structured["error"]["kind"].as_str()
    }
}

/// Writes an `mcpServers` config with the fixture server under each of `names`, in a fresh
/// temporary folder; returns the folder (kept until dropped) and the file. Each server gets
/// `FIXTURE_SECRET` from its `env` and `FIXTURE_FROM_FILE` from an `envFile` beside the config
/// (which names `FIXTURE_SECRET` too: `env` wins).
pub fn fixture_config(names: &[&str]) -> Result<(tempfile::TempDir, PathBuf)> {
    let dir = tempfile::TempDir::new()?;
    let fixture = crate::fixture_binary();
    std::fs::write(
        dir.path().join("fixture.env"),
        "# read by the gateway, relative to the config\nFIXTURE_FROM_FILE=from-env-file\nFIXTURE_SECRET=from-env-file\n",
    )?;
    let mut servers = Map::new();
    for name in names {
        servers.insert(
            (*name).to_owned(),
            json!({
                "command": fixture,
                "args": ["--name", name],
                "env": { "FIXTURE_SECRET": "from-config" },
                "envFile": "fixture.env",
            }),
        );
    }
    let path = dir.path().join("mcp.json");
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&json!({ "mcpServers": servers }))?,
    )?;
    Ok((dir, path))
}

/// The worker processes a gateway has started (running or waiting), by process id (Linux: read
/// from `/proc`).
pub fn worker_processes(gateway: u32) -> Vec<u32> {
    workers_with_kinds(gateway)
        .into_iter()
        .map(|(pid, _)| pid)
        .collect()
}

/// The worker processes a gateway has started, with the kind each runs (`javascript`, `python`):
/// its own children started as workers, and the workers its fork servers forked. The fork
/// servers themselves are not workers (they run no guest code).
pub fn workers_with_kinds(gateway: u32) -> Vec<(u32, String)> {
    let processes = worker_binaries();
    let mut workers = Vec::new();
    for (pid, parent, arguments) in &processes {
        let argument = |index: usize| arguments.get(index).cloned().unwrap_or_default();
        if *parent == gateway && argument(2) != "fork-server" {
            workers.push((*pid, argument(2)));
        }
        let forked_by = processes.iter().find(|(server, _, _)| server == parent);
        if let Some((_, server_parent, server_arguments)) = forked_by
            && *server_parent == gateway
            && server_arguments.get(2).map(String::as_str) == Some("fork-server")
        {
            let kind = server_arguments.get(3).cloned().unwrap_or_default();
            workers.push((*pid, kind));
        }
    }
    workers
}

/// The fork servers a gateway has started, with the kind of worker each forks.
pub fn fork_servers(gateway: u32) -> Vec<(u32, String)> {
    worker_binaries()
        .into_iter()
        .filter(|(_, parent, arguments)| {
            *parent == gateway && arguments.get(2).map(String::as_str) == Some("fork-server")
        })
        .map(|(pid, _, arguments)| (pid, arguments.get(3).cloned().unwrap_or_default()))
        .collect()
}

/// The parent of a process, while it runs (Linux: read from `/proc`).
pub fn parent_process(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = stat.rsplit_once(')')?.1;
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// Every process running the worker entry of `toolweave`: pid, parent pid, command line.
fn worker_binaries() -> Vec<(u32, u32, Vec<String>)> {
    let mut found = Vec::new();
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in processes.filter_map(Result::ok) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        // A process may end while it is looked at: skip what cannot be read.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let Some(parent) = after_name
            .split_whitespace()
            .nth(1)
            .and_then(|parent| parent.parse().ok())
        else {
            continue;
        };
        let command_line = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let arguments: Vec<String> = command_line
            .split(|byte| *byte == 0)
            .map(|argument| String::from_utf8_lossy(argument).into_owned())
            .collect();
        if arguments.get(1).map(String::as_str) == Some("__toolweave-worker") {
            found.push((pid, parent, arguments));
        }
    }
    found
}

/// CPU time (user + system, in clock ticks) of a process's threads whose name starts with
/// `prefix` (all of them for an empty prefix); 0 for a process that is gone.
pub fn cpu_ticks(process_id: u32, prefix: &str) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{process_id}/task")) else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|name| name.starts_with(prefix))
        })
        .filter_map(|task| std::fs::read_to_string(task.path().join("stat")).ok())
        .map(|stat| {
            // Fields after the parenthesised name: state is the 3rd field, utime the 14th,
            // stime the 15th.
            let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            let fields: Vec<&str> = after_name.split_whitespace().collect();
            let ticks = |at: usize| fields.get(at).and_then(|field| field.parse::<u64>().ok());
            ticks(11).unwrap_or(0) + ticks(12).unwrap_or(0)
        })
        .sum()
}
