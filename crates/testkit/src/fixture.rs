//! The fixture MCP server: known tools with known answers, for tests of toolweave and its crates.
//!
//! It speaks MCP on stdio (the `toolweave-fixture` binary), or with `--http ADDR` streamable HTTP
//! at `/mcp`, or with `--sse ADDR` the legacy HTTP+SSE transport at `/sse` (messages posted to
//! `/message`). Served over HTTP it writes `toolweave-fixture listening on URL` to stderr once it
//! accepts connections (`ADDR` may have port 0), and with `--require-header "Name: value"` it
//! answers requests without that header with HTTP 401. With `--oauth` it wants an OAuth bearer
//! token and is its own authorization server (see [`crate::fixture_oauth`]); `--token-lifetime-secs
//! N` says how long its tokens last. The tool list is built by hand (`list_tools`/`call_tool`, no macros) so tools can be
//! added while it runs. Logs go to stderr only: stdout is the MCP channel.
//!
//! Tools: `add`, `get-sum`, `echo`, `whoami`, `env`, `slow`, `fail`, `structured`, `image`,
//! `large`, `dotted.name`, `dash-name`, `crash`, `register`, `remove` (annotated destructive),
//! `stats`, `keep` (whose schema leaves `additionalProperties` unsaid and gives a required
//! argument a default; it answers with the arguments it got, as JSON text), `ask`, `sample` and
//! `roots`, which ask the client (elicitation, sampling, roots) and
//! answer with what it said, and `capabilities`, what the client declared (see
//! [`tool_definitions`]). When the client says its roots changed, the fixture asks for them at
//! once, as servers do, and keeps them for `roots` with `kept: true`. `--instructions TEXT` gives the
//! server instructions in its `initialize` answer. `--append-description TOOL=TEXT` adds TEXT to
//! a tool's description, and `register` with a `description` does so while it runs: a server whose
//! tool definitions changed. `--app-only TOOL` lists TOOL for the server's user interface only
//! (MCP Apps' `_meta.ui.visibility: ["app"]`).
//!
//! Faults, for tests of how a client copes: `--fail-start` (exit before `initialize`),
//! `--start-delay-ms N` (a slow start), `--stdout-garbage banner|only` (lines on stdout that are
//! not MCP, before serving or instead of it), `--exit-after-calls N` (exit once N tool calls are
//! answered), and the tools `crash` (exit mid-call) and `slow` (a call that hangs as long as
//! asked). `--faults` serves another server instead, written by hand, whose answers are faulty
//! byte for byte (see [`crate::faults`]).

// MCP logging, sampling and roots are deprecated by SEP-2577 for the newest protocol version; the
// fixture's `slow` logs, and `sample` and `roots` ask, as servers of 2025-11-25 and before do.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};

use crate::faults::FaultOptions;
use crate::fixture_oauth::OAuthOptions;
use crate::listen::Listen;

/// A 1×1 transparent PNG (grey + alpha), base64.
pub const TINY_PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

/// Exit status of the `crash` tool.
pub const CRASH_EXIT_CODE: u8 = 3;

/// What `--stdout-garbage` writes to stdout, line by line: what a server that logs to stdout, or
/// runs in some other mode than MCP on stdio, typically writes.
pub const STDOUT_GARBAGE: [&str; 2] = ["Listening on port 3000", "Press Ctrl+C to stop"];

/// How long `--exit-after-calls` waits after the last answer before exiting, so the answer is
/// written out first.
const EXIT_AFTER_CALLS_DELAY: Duration = Duration::from_millis(100);

/// The largest text `large` returns, so a typo cannot exhaust memory.
const MAX_LARGE_BYTES: u64 = 64 * 1024 * 1024;

/// Command-line options of the fixture server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureOptions {
    /// `--name NAME`: what `whoami` answers (default `fixture`).
    pub name: String,
    /// `--fail-start`: write "failing on purpose" to stderr and exit 1 before `initialize`.
    pub fail_start: bool,
    /// `--start-delay-ms N`: wait this long before serving.
    pub start_delay: Duration,
    /// `--page-size N`: answer `tools/list` in pages of N tools (default: one page).
    pub page_size: Option<usize>,
    /// `--http ADDR` or `--sse ADDR`: serve over HTTP instead of stdio.
    pub listen: Option<Listen>,
    /// `--require-header "Name: value"`: HTTP requests without it are answered 401.
    pub require_header: Option<(String, String)>,
    /// `--oauth` (with `--token-lifetime-secs N`): HTTP requests need a bearer token the fixture's
    /// own authorization server issued.
    pub oauth: Option<OAuthOptions>,
    /// `--stdout-garbage banner|only`: write [`STDOUT_GARBAGE`] to stdout (stdio only).
    pub stdout_garbage: Option<StdoutGarbage>,
    /// `--exit-after-calls N`: once N tool calls are answered, write "exiting after N calls" to
    /// stderr and exit with status 0. Calls after the Nth are never answered.
    pub exit_after_calls: Option<u64>,
    /// `--faults` (with `--fault-initialize`, `--fault-tools`, `--fault-framing`): serve the
    /// fault mode instead of the fixture's tools.
    pub faults: Option<FaultOptions>,
    /// `--instructions TEXT`: the instructions its `initialize` answer gives.
    pub instructions: Option<String>,
    /// `--tools N`: serve N synthetic tools (`crate::synthetic`) instead of the fixture's own; a
    /// call to one answers with its name and arguments.
    pub synthetic_tools: Option<usize>,
    /// `--append-description TOOL=TEXT` (repeatable): TEXT is added to the end of TOOL's
    /// description, as a server that changed a tool's definition would list it.
    pub appended_descriptions: Vec<(String, String)>,
    /// `--app-only TOOL` (repeatable): TOOL is listed as an MCP Apps tool for the server's user
    /// interface only (`_meta.ui.visibility: ["app"]`); it still answers a call.
    pub app_only: Vec<String>,
    /// `--record-meta FILE`: the `_meta` and arguments of every tool call are added to FILE, one
    /// JSON line `{"tool", "meta", "arguments"}` each, so a test sees what a client sent.
    pub record_meta: Option<std::path::PathBuf>,
}

/// What `--stdout-garbage` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdoutGarbage {
    /// `banner`: the lines, then MCP as usual (clients that skip such lines work).
    Banner,
    /// `only`: the lines, then nothing more on stdout; stdin is read until it closes.
    Only,
}

impl Default for FixtureOptions {
    fn default() -> Self {
        Self {
            name: "fixture".to_owned(),
            fail_start: false,
            start_delay: Duration::ZERO,
            page_size: None,
            record_meta: None,
            listen: None,
            require_header: None,
            oauth: None,
            stdout_garbage: None,
            exit_after_calls: None,
            faults: None,
            instructions: None,
            synthetic_tools: None,
            appended_descriptions: Vec::new(),
            app_only: Vec::new(),
        }
    }
}

impl FixtureOptions {
    /// Parses the arguments after the program name; `Err` holds a usage message.
    #[expect(
        clippy::too_many_lines,
        reason = "the test fixture's table, read top to bottom beside the tests that use it"
    )]
    pub fn parse(arguments: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut options = Self::default();
        let mut arguments = arguments.into_iter();
        while let Some(argument) = arguments.next() {
            let mut value = |flag: &str| {
                arguments
                    .next()
                    .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
            };
            match argument.as_str() {
                "--name" => options.name = value("--name")?,
                "--instructions" => options.instructions = Some(value("--instructions")?),
                "--fail-start" => options.fail_start = true,
                "--append-description" => {
                    let text = value("--append-description")?;
                    let (tool, appended) = text.split_once('=').ok_or_else(|| {
                        format!("--append-description takes TOOL=TEXT, got {text:?}")
                    })?;
                    options
                        .appended_descriptions
                        .push((tool.to_owned(), appended.to_owned()));
                }
                "--app-only" => options.app_only.push(value("--app-only")?),
                "--tools" => {
                    let text = value("--tools")?;
                    let most = crate::synthetic::MAX_SYNTHETIC_TOOLS;
                    let count: usize = text
                        .parse()
                        .ok()
                        .filter(|count| (1..=most).contains(count))
                        .ok_or_else(|| {
                            format!("--tools takes a number from 1 to {most}, got {text:?}")
                        })?;
                    options.synthetic_tools = Some(count);
                }
                "--start-delay-ms" => {
                    let text = value("--start-delay-ms")?;
                    let millis: u64 = text.parse().map_err(|_| {
                        format!("--start-delay-ms takes milliseconds, got {text:?}")
                    })?;
                    options.start_delay = Duration::from_millis(millis);
                }
                "--page-size" => {
                    let text = value("--page-size")?;
                    let size: usize =
                        text.parse().ok().filter(|size| *size > 0).ok_or_else(|| {
                            format!("--page-size takes a positive number, got {text:?}")
                        })?;
                    options.page_size = Some(size);
                }
                "--record-meta" => {
                    options.record_meta = Some(value("--record-meta")?.into());
                }
                "--http" => options.listen = Some(Listen::Http(value("--http")?)),
                "--sse" => options.listen = Some(Listen::Sse(value("--sse")?)),
                "--require-header" => {
                    let text = value("--require-header")?;
                    let (name, header_value) = text.split_once(':').ok_or_else(|| {
                        format!("--require-header takes \"Name: value\", got {text:?}")
                    })?;
                    options.require_header =
                        Some((name.trim().to_owned(), header_value.trim().to_owned()));
                }
                "--oauth" => {
                    options.oauth.get_or_insert_default();
                }
                "--token-lifetime-secs" => {
                    let text = value("--token-lifetime-secs")?;
                    let seconds: u64 = text
                        .parse()
                        .ok()
                        .filter(|seconds| *seconds > 0)
                        .ok_or_else(|| {
                            format!("--token-lifetime-secs takes a positive number, got {text:?}")
                        })?;
                    options.oauth.get_or_insert_default().token_lifetime =
                        Duration::from_secs(seconds);
                }
                "--stdout-garbage" => {
                    options.stdout_garbage = Some(match value("--stdout-garbage")?.as_str() {
                        "banner" => StdoutGarbage::Banner,
                        "only" => StdoutGarbage::Only,
                        other => {
                            return Err(format!(
                                "--stdout-garbage takes banner or only, got {other:?}"
                            ));
                        }
                    });
                }
                "--exit-after-calls" => {
                    let text = value("--exit-after-calls")?;
                    let calls: u64 =
                        text.parse()
                            .ok()
                            .filter(|calls| *calls > 0)
                            .ok_or_else(|| {
                                format!("--exit-after-calls takes a positive number, got {text:?}")
                            })?;
                    options.exit_after_calls = Some(calls);
                }
                "--faults" => {
                    options.faults.get_or_insert_default();
                }
                "--fault-initialize" => {
                    options.faults.get_or_insert_default().initialize = Some(
                        FaultOptions::parse_initialize(&value("--fault-initialize")?)?,
                    );
                }
                "--fault-tools" => {
                    options.faults.get_or_insert_default().tools =
                        FaultOptions::parse_tools(&value("--fault-tools")?)?;
                }
                "--fault-framing" => {
                    options.faults.get_or_insert_default().framing =
                        FaultOptions::parse_framing(&value("--fault-framing")?)?;
                }
                "--help" | "-h" => return Err(USAGE.to_owned()),
                other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
            }
        }
        if options.oauth.is_some() && options.listen.is_none() {
            return Err("--oauth is for --http and --sse".to_owned());
        }
        if options.stdout_garbage.is_some() && options.listen.is_some() {
            return Err("--stdout-garbage is for stdio: over HTTP stdout is no channel".to_owned());
        }
        Ok(options)
    }
}

/// What `--help` prints.
pub const USAGE: &str = "usage: toolweave-fixture [--name NAME] [--instructions TEXT] [--tools N] [--append-description TOOL=TEXT] [--app-only TOOL] [--fail-start] [--start-delay-ms N] [--page-size N] [--record-meta FILE] [--http ADDR | --sse ADDR] [--require-header \"Name: value\"] [--oauth [--token-lifetime-secs N]] [--stdout-garbage banner|only] [--exit-after-calls N] [--faults [--fault-initialize KIND] [--fault-tools malformed,deep:N] [--fault-framing events|json]]";

/// The server handler. Cheap to clone: clones share the tool list.
#[derive(Debug, Clone)]
pub struct FixtureServer {
    name: String,
    page_size: Option<usize>,
    tools: Arc<RwLock<Vec<Tool>>>,
    slow: Arc<SlowCounts>,
    exit_after_calls: Option<u64>,
    /// Tool calls received, for `--exit-after-calls`.
    calls: Arc<AtomicU64>,
    /// What `initialize` answers as instructions.
    instructions: Option<String>,
    /// The roots the client gave when asked after it said they changed.
    kept_roots: Arc<RwLock<Option<Value>>>,
    /// Whether the tools are synthetic (`--tools N`).
    synthetic: bool,
    /// Where each call's `_meta` and arguments are added (`--record-meta`).
    record_meta: Option<std::path::PathBuf>,
}

/// What became of `slow` calls, reported by the `stats` tool: tests see from outside whether a
/// client abandoned a call (and said so) or waited for it.
#[derive(Debug, Default)]
struct SlowCounts {
    started: AtomicU64,
    cancelled: AtomicU64,
    finished: AtomicU64,
}

impl FixtureServer {
    /// A server answering `whoami` with `name`, listing tools in pages of `page_size` if given.
    pub fn new(name: impl Into<String>, page_size: Option<usize>) -> Self {
        Self {
            name: name.into(),
            page_size,
            tools: Arc::new(RwLock::new(tool_definitions())),
            slow: Arc::default(),
            exit_after_calls: None,
            calls: Arc::default(),
            instructions: None,
            kept_roots: Arc::default(),
            synthetic: false,
            record_meta: None,
        }
    }

    /// Serves `count` synthetic tools instead of the fixture's own, when given (see
    /// [`FixtureOptions::synthetic_tools`]).
    pub fn with_synthetic_tools(mut self, count: Option<usize>) -> Self {
        if let Some(count) = count {
            self.tools = Arc::new(RwLock::new(crate::synthetic::synthetic_tools(count)));
            self.synthetic = true;
        }
        self
    }

    /// Gives `instructions` in the `initialize` answer (see [`FixtureOptions::instructions`]).
    pub fn with_instructions(mut self, instructions: Option<String>) -> Self {
        self.instructions = instructions;
        self
    }

    /// Adds each text to the end of its tool's description (see
    /// [`FixtureOptions::appended_descriptions`]).
    pub fn with_appended_descriptions(self, appended: &[(String, String)]) -> Self {
        for (tool, text) in appended {
            self.append_description(tool, text);
        }
        self
    }

    /// Lists each of `tools` for the server's user interface only (see
    /// [`FixtureOptions::app_only`]).
    pub fn with_app_only(self, tools: &[String]) -> Self {
        let mut listed = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        for tool in listed
            .iter_mut()
            .filter(|tool| tools.iter().any(|name| tool.name == *name))
        {
            let meta: Map<String, Value> = [("ui".to_owned(), json!({"visibility": ["app"]}))]
                .into_iter()
                .collect();
            tool.meta = Some(rmcp::model::MetaObject(meta));
        }
        drop(listed);
        self
    }

    /// Adds `text` to the end of `tool`'s description; `false` when there is no such tool.
    fn append_description(&self, tool: &str, text: &str) -> bool {
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        let Some(listed) = tools.iter_mut().find(|listed| listed.name == tool) else {
            return false;
        };
        let description = format!("{}{text}", listed.description.as_deref().unwrap_or(""));
        listed.description = Some(description.into());
        true
    }

    /// Adds the `_meta` of every tool call to `path` (see [`FixtureOptions::record_meta`]).
    pub fn with_record_meta(mut self, path: Option<std::path::PathBuf>) -> Self {
        self.record_meta = path;
        self
    }

    /// Exits the process once `calls` tool calls are answered (see
    /// [`FixtureOptions::exit_after_calls`]).
    pub fn with_exit_after_calls(mut self, calls: Option<u64>) -> Self {
        self.exit_after_calls = calls;
        self
    }

    fn tools(&self) -> Vec<Tool> {
        // A poisoned lock only means a panic elsewhere; the list itself is whole.
        self.tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    #[expect(
        clippy::too_many_lines,
        reason = "the test fixture's table, read top to bottom beside the tests that use it"
    )]
    async fn call(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if self.synthetic {
            let listed = self
                .tools
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .any(|tool| tool.name == name);
            if !listed {
                return Err(ErrorData::invalid_params(format!("no tool {name:?}"), None));
            }
            let mut result = text(json!({ "tool": name, "arguments": arguments }).to_string());
            result.structured_content = Some(json!({ "tool": name, "arguments": arguments }));
            return Ok(result);
        }
        let result = match name {
            "add" | "get-sum" => text(sum(number(arguments, "a")?, number(arguments, "b")?)),
            "echo" => text(string(arguments, "message")?),
            "keep" => text(Value::Object(arguments.clone()).to_string()),
            "remove" => text(format!("removed {}", string(arguments, "name")?)),
            "whoami" => text(self.name.clone()),
            "env" => text(std::env::var(string(arguments, "name")?).unwrap_or_default()),
            "slow" => {
                let millis = integer(arguments, "ms")?;
                self.slow.started.fetch_add(1, Ordering::SeqCst);
                // Says what it does as a log message, and, when the caller asked for progress,
                // as progress 1 of 2 now and 2 of 2 when done.
                let progress = context.meta.get_progress_token();
                let report = async |step: f64, message: &str| {
                    if let Some(token) = progress.clone() {
                        let mut params = ProgressNotificationParam::new(token, step);
                        params.total = Some(2.0);
                        params.message = Some(message.to_owned());
                        let _ = context.peer.notify_progress(params).await;
                    }
                };
                let mut log = LoggingMessageNotificationParam::new(
                    LoggingLevel::Info,
                    json!(format!("slow: waiting {millis} ms")),
                );
                log.logger = Some("slow".to_owned());
                let _ = context.peer.notify_logging_message(log).await;
                report(1.0, "waiting").await;
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(millis)) => {
                        self.slow.finished.fetch_add(1, Ordering::SeqCst);
                        report(2.0, "done").await;
                        text("done")
                    }
                    () = context.ct.cancelled() => {
                        // The client sent notifications/cancelled: its answer is not read.
                        self.slow.cancelled.fetch_add(1, Ordering::SeqCst);
                        tracing::info!(millis, "slow: cancelled by the client");
                        text("cancelled")
                    }
                }
            }
            "fail" => {
                CallToolResult::error(vec![ContentBlock::text(string(arguments, "message")?)])
            }
            "structured" => {
                let weather = weather(&string(arguments, "city")?);
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(weather.to_string())]);
                result.structured_content = Some(weather);
                result
            }
            "image" => {
                CallToolResult::success(vec![ContentBlock::image(TINY_PNG_BASE64, "image/png")])
            }
            "large" => {
                let bytes = integer(arguments, "bytes")?;
                if bytes > MAX_LARGE_BYTES {
                    return Err(ErrorData::invalid_params(
                        format!("\"bytes\" must be at most {MAX_LARGE_BYTES}"),
                        None,
                    ));
                }
                text("x".repeat(usize::try_from(bytes).unwrap_or_default()))
            }
            "dotted.name" | "dash-name" => text(name),
            "roots" if arguments.get("kept") == Some(&Value::Bool(true)) => {
                let kept = self
                    .kept_roots
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone()
                    .unwrap_or(Value::Null);
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(kept.to_string())]);
                result.structured_content = Some(kept);
                result
            }
            "ask" | "sample" | "roots" => ask_client(name, arguments, context).await?,
            "capabilities" => {
                let declared = context
                    .peer
                    .peer_info()
                    .map(|info| serde_json::to_value(&info.capabilities).unwrap_or_default())
                    .unwrap_or_default();
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(declared.to_string())]);
                result.structured_content = Some(declared);
                result
            }
            "stats" => {
                let counts = json!({
                    "slow": {
                        "started": self.slow.started.load(Ordering::SeqCst),
                        "cancelled": self.slow.cancelled.load(Ordering::SeqCst),
                        "finished": self.slow.finished.load(Ordering::SeqCst),
                    }
                });
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(counts.to_string())]);
                result.structured_content = Some(counts);
                result
            }
            "crash" => {
                // Mid-call, as a real server crash would be: no answer, an exit status and stderr.
                eprintln!("fixture {}: crashing on purpose", self.name);
                std::process::exit(i32::from(CRASH_EXIT_CODE));
            }
            "register" => {
                let new_name = string(arguments, "name")?;
                match arguments.get("description").and_then(Value::as_str) {
                    Some(appended) if self.append_description(&new_name, appended) => {}
                    _ => self.register(&new_name),
                }
                if let Err(error) = context.peer.notify_tool_list_changed().await {
                    tracing::warn!(%error, "could not send notifications/tools/list_changed");
                }
                text(format!("registered {new_name}"))
            }
            other if self.tools().iter().any(|tool| tool.name == other) => {
                // A tool added by `register` answers with its name.
                text(other)
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool {other:?}"),
                    None,
                ));
            }
        };
        Ok(result)
    }

    fn register(&self, name: &str) {
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        if tools.iter().all(|tool| tool.name != name) {
            tools.push(tool(
                name.to_owned(),
                "A tool added at run time by `register`; answers with its name.",
                empty_schema(),
            ));
        }
    }
}

/// `ask`, `sample` and `roots`: sends the client an elicitation, a sampling request or
/// `roots/list`, and answers with what it said (as text and structured content), or with the
/// client's error as an error result.
async fn ask_client(
    name: &str,
    arguments: &Map<String, Value>,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    use rmcp::model::{CreateMessageRequestParams, ElicitRequestParams, ElicitationSchema};
    let answer = match name {
        "ask" => {
            let schema = ElicitationSchema::builder()
                .required_string("answer")
                .build()
                .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: string(arguments, "message")?,
                requested_schema: schema,
            };
            context
                .peer
                .create_elicitation(params)
                .await
                .map(|answer| serde_json::to_value(answer).unwrap_or_default())
        }
        "sample" => {
            let message = rmcp::model::SamplingMessage::user_text(string(arguments, "prompt")?);
            let params = CreateMessageRequestParams::new(vec![message], 50);
            context
                .peer
                .create_message(params)
                .await
                .map(|answer| serde_json::to_value(answer).unwrap_or_default())
        }
        _ => context
            .peer
            .list_roots()
            .await
            .map(|answer| serde_json::to_value(answer).unwrap_or_default()),
    };
    Ok(match answer {
        Ok(answer) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(answer.to_string())]);
            result.structured_content = Some(answer);
            result
        }
        Err(error) => CallToolResult::error(vec![ContentBlock::text(format!(
            "the client did not answer: {error}"
        ))]),
    })
}

impl ServerHandler for FixtureServer {
    fn get_info(&self) -> ServerConfig {
        let config = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new(
            "toolweave-fixture",
            env!("CARGO_PKG_VERSION"),
        ));
        match &self.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    /// The fixture speaks the revisions with `initialize` (2025-11-25 and before) only: its `ask`,
    /// `sample` and `roots` send the client requests, which MCP 2026-07-28 has no place for. A
    /// client that asks `server/discover` first (toolweave does) is told the method is unknown,
    /// and initializes.
    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::DiscoverResult, ErrorData> {
        Err(ErrorData::method_not_found::<
            rmcp::model::DiscoverRequestMethod,
        >())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.tools();
        let Some(page_size) = self.page_size else {
            return Ok(ListToolsResult::with_all_items(tools));
        };
        // The cursor is the index of the first tool of the page.
        let start = match request.and_then(|request| request.cursor) {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| {
                ErrorData::invalid_params(format!("invalid cursor {cursor:?}"), None)
            })?,
        };
        let end = start.saturating_add(page_size).min(tools.len());
        let page = tools
            .get(start..end)
            .map(<[Tool]>::to_vec)
            .unwrap_or_default();
        let mut result = ListToolsResult::with_all_items(page);
        if end < tools.len() {
            result.next_cursor = Some(end.to_string());
        }
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|tool| tool.name == name)
            .cloned()
    }

    async fn on_roots_list_changed(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        // Asked at once, whatever calls are in flight, as servers do.
        let kept = self.kept_roots.clone();
        tokio::spawn(async move {
            match context.peer.list_roots().await {
                Ok(roots) => {
                    *kept.write().unwrap_or_else(PoisonError::into_inner) =
                        serde_json::to_value(roots).ok();
                }
                Err(error) => tracing::warn!(%error, "the client did not give its roots"),
            }
        });
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        if let Some(path) = &self.record_meta {
            let line =
                json!({ "tool": request.name, "meta": context.meta, "arguments": arguments });
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut file| {
                    std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes())
                });
            if let Err(error) = written {
                tracing::warn!(%error, path = %path.display(), "could not record a call's _meta");
            }
        }
        let number = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let Some(limit) = self.exit_after_calls else {
            let result = self.call(&request.name, &arguments, &context).await?;
            return Ok(CallToolResponse::Complete(result));
        };
        if number > limit {
            // The process exits in a moment: this call finds a server going away.
            return std::future::pending().await;
        }
        let result = self.call(&request.name, &arguments, &context).await;
        if number == limit {
            let name = self.name.clone();
            tokio::spawn(async move {
                tokio::time::sleep(EXIT_AFTER_CALLS_DELAY).await;
                eprintln!("fixture {name}: exiting after {limit} calls (--exit-after-calls)");
                std::process::exit(0);
            });
        }
        Ok(CallToolResponse::Complete(result?))
    }
}

/// Runs the server on stdin/stdout until the client disconnects.
pub async fn serve_stdio(options: FixtureOptions) -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    use std::io::Write;

    if !options.start_delay.is_zero() {
        tokio::time::sleep(options.start_delay).await;
    }
    if let Some(garbage) = options.stdout_garbage {
        // On purpose: the mistake a client has to cope with (and a real server must not make).
        let mut stdout = std::io::stdout().lock();
        for line in STDOUT_GARBAGE {
            writeln!(stdout, "{line}")?;
        }
        stdout.flush()?;
        drop(stdout);
        if garbage == StdoutGarbage::Only {
            tokio::io::copy(&mut tokio::io::stdin(), &mut tokio::io::sink()).await?;
            return Ok(());
        }
    }
    let server = FixtureServer::new(options.name.clone(), options.page_size)
        .with_exit_after_calls(options.exit_after_calls)
        .with_record_meta(options.record_meta.clone())
        .with_instructions(options.instructions.clone())
        .with_synthetic_tools(options.synthetic_tools)
        .with_appended_descriptions(&options.appended_descriptions)
        .with_app_only(&options.app_only);
    let service = server.serve(rmcp::transport::stdio()).await?;
    tracing::info!(name = %options.name, "fixture serving on stdio");
    let reason = service.waiting().await?;
    tracing::info!(?reason, "fixture done");
    Ok(())
}

/// The tool list a fresh fixture server has, in this order.
#[expect(
    clippy::too_many_lines,
    reason = "the test fixture's table, read top to bottom beside the tests that use it"
)]
pub fn tool_definitions() -> Vec<Tool> {
    let two_numbers = json!({
        "type": "object",
        "properties": {
            "a": { "type": "number", "description": "The first number." },
            "b": { "type": "number", "description": "The second number." }
        },
        "required": ["a", "b"],
        "additionalProperties": false
    });
    let one_string = |key: &str, description: &str| {
        json!({
            "type": "object",
            "properties": { key: { "type": "string", "description": description } },
            "required": [key],
            "additionalProperties": false
        })
    };
    let one_count = |key: &str, description: &str| {
        json!({
            "type": "object",
            "properties": { key: { "type": "integer", "minimum": 0, "description": description } },
            "required": [key],
            "additionalProperties": false
        })
    };
    let mut structured = tool(
        "structured",
        "Weather for a city: made up, but always the same for the same city. Returns structuredContent.",
        one_string("city", "The city's name."),
    );
    structured.output_schema = Some(Arc::new(object(json!({
        "type": "object",
        "properties": {
            "city": { "type": "string" },
            "temperature": { "type": "number", "description": "Degrees Celsius." },
            "conditions": { "type": "string" }
        },
        "required": ["city", "temperature", "conditions"],
        "additionalProperties": false
    }))));
    vec![
        tool(
            "add",
            "Add two numbers and return their sum.",
            two_numbers.clone(),
        ),
        tool(
            "get-sum",
            "Return the sum of two numbers (a dashed name for tests of name mapping).",
            two_numbers,
        ),
        tool(
            "echo",
            "Return the message as text.",
            one_string("message", "Text to send back."),
        ),
        tool(
            "whoami",
            "Return this server's name (its --name).",
            empty_schema(),
        ),
        tool(
            "env",
            "Return the value of one environment variable of the server process (empty when unset).",
            one_string("name", "The variable's name."),
        ),
        tool(
            "slow",
            "Wait the given number of milliseconds, then return \"done\".",
            one_count("ms", "How long to wait, in milliseconds."),
        ),
        tool(
            "fail",
            "Return an error result (isError: true) whose text is the message.",
            one_string("message", "The error text."),
        ),
        structured,
        tool(
            "image",
            "Return a 1x1 PNG image as image content.",
            empty_schema(),
        ),
        tool(
            "large",
            "Return a text of exactly the given number of bytes.",
            one_count("bytes", "Length of the text, in bytes."),
        ),
        tool(
            "dotted.name",
            "Return the text \"dotted.name\".",
            empty_schema(),
        ),
        tool(
            "dash-name",
            "Return the text \"dash-name\".",
            empty_schema(),
        ),
        tool(
            "crash",
            "Write a line to stderr and exit at once with status 3, without answering.",
            empty_schema(),
        ),
        tool(
            "register",
            "Add a tool with the given name to this server's list (or, with a description, add that text to the end of the named tool's description) and send notifications/tools/list_changed.",
            json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "The new tool's name." },
                    "description": { "type": "string", "description": "Text to add to the end of the description of the tool of that name." }
                },
                "required": ["name"],
                "additionalProperties": false
            }),
        ),
        tool(
            "remove",
            "Pretend to remove the named item (annotated destructiveHint: true) and say so.",
            one_string("name", "The item to remove."),
        )
        .annotate(ToolAnnotations::new().read_only(false).destructive(true)),
        tool(
            "stats",
            "Count the slow calls this server started, saw cancelled, and finished.",
            empty_schema(),
        ),
        tool(
            "keep",
            "Pretend to keep a value under a key, expiring after some seconds; answer with the arguments received, as JSON text.",
            json!({
                "type": "object",
                "properties": {
                    "key": { "type": "string", "description": "Where the value goes." },
                    "value": { "type": "string", "description": "What to keep." },
                    "expire_seconds": { "type": "integer", "minimum": 1, "description": "How long to keep it." },
                    "mode": { "type": "string", "enum": ["plain", "json"], "default": "plain", "description": "How the value is read." }
                },
                "required": ["key", "value", "mode"]
            }),
        ),
        tool(
            "ask",
            "Ask the person at the client (elicitation) for an answer to the message; return what they did.",
            one_string("message", "The question."),
        ),
        tool(
            "sample",
            "Ask the client's model (sampling) to complete the prompt; return its answer.",
            one_string("prompt", "What to ask the model."),
        ),
        tool(
            "roots",
            "Ask the client for its roots (roots/list) and return them; with kept: true, return the roots it gave when last asked after it said they changed.",
            json!({
                "type": "object",
                "properties": { "kept": { "type": "boolean", "description": "Return the kept roots instead of asking." } },
                "required": [],
                "additionalProperties": false
            }),
        ),
        tool(
            "capabilities",
            "Return the capabilities the client declared in its initialize.",
            empty_schema(),
        ),
    ]
}

fn tool(
    name: impl Into<std::borrow::Cow<'static, str>>,
    description: &'static str,
    schema: Value,
) -> Tool {
    Tool::new(name, description, Arc::new(object(schema)))
}

fn empty_schema() -> Value {
    json!({ "type": "object", "properties": {}, "required": [], "additionalProperties": false })
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        // Every schema here is an object literal.
        _ => Map::new(),
    }
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

fn missing(key: &str, expected: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("\"{key}\" is required and must be {expected}"),
        None,
    )
}

fn number(arguments: &Map<String, Value>, key: &str) -> Result<serde_json::Number, ErrorData> {
    match arguments.get(key) {
        Some(Value::Number(number)) => Ok(number.clone()),
        _ => Err(missing(key, "a number")),
    }
}

fn integer(arguments: &Map<String, Value>, key: &str) -> Result<u64, ErrorData> {
    arguments
        .get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| missing(key, "a non-negative integer"))
}

fn string(arguments: &Map<String, Value>, key: &str) -> Result<String, ErrorData> {
    match arguments.get(key) {
        Some(Value::String(text)) => Ok(text.clone()),
        _ => Err(missing(key, "a string")),
    }
}

/// The sum as JSON text: integers stay integers (`"7"`), anything else is a float.
fn sum(a: serde_json::Number, b: serde_json::Number) -> String {
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64())
        && let Some(total) = a.checked_add(b)
    {
        return total.to_string();
    }
    let total = a.as_f64().unwrap_or_default() + b.as_f64().unwrap_or_default();
    Value::from(total).to_string()
}

/// Made-up weather that depends only on the city's name.
fn weather(city: &str) -> Value {
    const CONDITIONS: [&str; 6] = ["sunny", "cloudy", "rain", "snow", "windy", "fog"];
    // FNV-1a: stable across Rust versions, unlike the standard hasher.
    let hash = city.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    let tenths = i32::try_from(hash % 400).unwrap_or_default();
    let temperature = f64::from(tenths - 50) / 10.0;
    let conditions = CONDITIONS
        .get(usize::try_from((hash >> 16) % 6).unwrap_or_default())
        .copied()
        .unwrap_or("sunny");
    json!({ "city": city, "temperature": temperature, "conditions": conditions })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse() {
        let options = FixtureOptions::parse(
            [
                "--name",
                "alpha",
                "--start-delay-ms",
                "20",
                "--page-size",
                "3",
                "--fail-start",
                "--sse",
                "127.0.0.1:0",
                "--require-header",
                "Authorization: Bearer abc",
                "--exit-after-calls",
                "2",
                "--tools",
                "500",
                "--append-description",
                "add= Then more.",
                "--app-only",
                "whoami",
                "--record-meta",
                "meta.jsonl",
            ]
            .map(String::from),
        )
        .unwrap();
        assert_eq!(
            options,
            FixtureOptions {
                name: "alpha".into(),
                fail_start: true,
                start_delay: Duration::from_millis(20),
                page_size: Some(3),
                listen: Some(Listen::Sse("127.0.0.1:0".into())),
                require_header: Some(("Authorization".into(), "Bearer abc".into())),
                oauth: None,
                stdout_garbage: None,
                exit_after_calls: Some(2),
                faults: None,
                instructions: None,
                synthetic_tools: Some(500),
                appended_descriptions: vec![("add".into(), " Then more.".into())],
                app_only: vec!["whoami".into()],
                record_meta: Some("meta.jsonl".into()),
            }
        );
        let options = FixtureOptions::parse(
            [
                "--fault-tools",
                "deep:3",
                "--fault-initialize",
                "truncated",
                "--fault-framing",
                "json",
            ]
            .map(String::from),
        )
        .unwrap();
        let faults = options.faults.unwrap();
        assert_eq!(faults.tools, [crate::faults::BadTools::DeepSchema(3)]);
        assert_eq!(
            faults.initialize,
            Some(crate::faults::InitializeFault::Fault(
                crate::faults::Fault::Truncated
            ))
        );
        assert_eq!(faults.framing, crate::faults::Framing::Json);
        assert!(
            FixtureOptions::parse(["--faults".to_owned()])
                .unwrap()
                .faults
                .is_some()
        );
        let options =
            FixtureOptions::parse(["--stdout-garbage", "only"].map(String::from)).unwrap();
        assert_eq!(options.stdout_garbage, Some(StdoutGarbage::Only));
        assert!(FixtureOptions::parse(["--stdout-garbage", "loud"].map(String::from)).is_err());
        assert!(
            FixtureOptions::parse(
                ["--stdout-garbage", "banner", "--http", "127.0.0.1:0"].map(String::from)
            )
            .is_err()
        );
        assert!(FixtureOptions::parse(["--exit-after-calls", "x"].map(String::from)).is_err());
        assert!(FixtureOptions::parse(["--exit-after-calls", "0"].map(String::from)).is_err());
        assert!(FixtureOptions::parse(["--require-header".into(), "no colon".into()]).is_err());
        assert!(FixtureOptions::parse(["--bogus".to_owned()]).is_err());
        assert!(FixtureOptions::parse(["--name".to_owned()]).is_err());
    }

    #[test]
    fn sums_keep_integers() {
        assert_eq!(sum(2.into(), 5.into()), "7");
        let half = serde_json::Number::from_f64(0.5).unwrap();
        assert_eq!(sum(half, 2.into()), "2.5");
    }

    #[test]
    fn weather_is_deterministic() {
        assert_eq!(weather("Oslo"), weather("Oslo"));
        assert_ne!(
            weather("Oslo")["temperature"],
            weather("Lima")["temperature"]
        );
        assert_eq!(weather("Kyoto")["city"], "Kyoto");
    }

    #[test]
    fn every_schema_is_a_closed_object() {
        for tool in tool_definitions() {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            if tool.name == "keep" {
                // Left open on purpose: it is how arguments a schema does not declare are tested.
                assert!(!tool.input_schema.contains_key("additionalProperties"));
                continue;
            }
            assert!(
                tool.input_schema.contains_key("properties"),
                "{}",
                tool.name
            );
            assert!(tool.input_schema.contains_key("required"), "{}", tool.name);
            assert_eq!(
                tool.input_schema["additionalProperties"], false,
                "{}",
                tool.name
            );
        }
    }
}
