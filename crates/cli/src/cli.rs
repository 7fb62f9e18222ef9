//! Commands: `serve` (an MCP server on stdio), `run` (one program), `tools` (search), `types`
//! (TypeScript declarations), `doctor`, `servers`, `config` / `init` (in `setup.rs`),
//! `login` / `logout` (in `login.rs`) and `approve` (in `approve.rs`).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use rmcp::ServiceExt;
use toolweave_config::{Config, Limits};
use toolweave_core::{
    ClientSessions, DISCOVERY_WAIT, ExecuteOptions, Gateway, Isolation, Language, WorkerCommand,
};
use tracing_subscriber::EnvFilter;

use crate::printed::{ToolsQuestion, flavor, tools_printed, unavailable_text};
use crate::rules::{identity_rules, policy_of, rules, settings_file};

/// One MCP server that stands in for all of them: models call every upstream tool from
/// sandboxed TypeScript.
#[derive(Debug, Parser)]
#[command(name = "toolweave", version, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP (stdio, or streamable HTTP with --http): search_tools, describe_tools and
    /// execute_code over every configured server (execute_code alone with --shape single), and
    /// the upstream tools --direct names.
    Serve(Box<ServeArgs>),
    /// Run one program file (.ts, .js; `-` reads standard input) and print its result as JSON.
    Run(RunArgs),
    /// Search the tools of every configured server.
    Tools(ToolsArgs),
    /// Print TypeScript declarations for every tool (a .d.ts for editors and models), or Python
    /// stubs with --python.
    Types(TypesArgs),
    /// Check this machine's sandbox and every upstream server (from --config, or discovered);
    /// print what to fix.
    Doctor(DoctorArgs),
    /// Start every configured upstream server once and show its state, tool count, start-up
    /// time and error.
    Servers(ServersArgs),
    /// Show every server toolweave would front, the file it came from, what overrode what and
    /// what was skipped.
    Config(crate::setup::ConfigArgs),
    /// Register toolweave in an MCP client's config file (with a backup), optionally disabling
    /// the servers it now fronts there.
    Init(crate::setup::InitArgs),
    /// Trust the servers this folder's own .mcp.json, .cursor/mcp.json and .vscode/mcp.json
    /// name, after showing what they run: until then toolweave does not start them. Then accept
    /// the tool definitions that changed since toolweave pinned them, after showing the change:
    /// until then those tools are held.
    Trust(crate::setup::TrustArgs),
    /// Log in to a remote server that asks for OAuth: prints the address to open (and opens a
    /// browser where there is one), takes the answer on 127.0.0.1, and keeps the login for
    /// `serve`, which renews it.
    Login(crate::login::LoginArgs),
    /// Forget the login of a remote server, and revoke its token where the server takes that.
    Logout(crate::login::LogoutArgs),
    /// Run guest code for a gateway on another machine (`serve --runner`): jobs come over
    /// stdin and stdout (`--runner "ssh host toolweave runner"`), or over TCP with --listen and
    /// a token; each runs in a confined worker here, and every tool call goes back to the
    /// gateway.
    Runner(RunnerArgs),
    /// List the calls waiting for approval in the gateways you run on this machine (their
    /// tool, arguments and page), and answer one: `toolweave approve ID --yes` (or --deny).
    Approve(crate::approve::ApproveArgs),
}

#[derive(Debug, Args)]
struct RunnerArgs {
    /// Listen on this TCP address instead of serving stdin and stdout; needs --token-env.
    #[arg(long, value_name = "ADDRESS")]
    listen: Option<std::net::SocketAddr>,
    /// The environment variable holding the token a gateway must greet this runner with
    /// (its --runner-token-env); required with --listen.
    #[arg(long, value_name = "NAME")]
    token_env: Option<String>,
    /// The largest limits a job may ask for: a gateway's limits must not be above them.
    #[command(flatten)]
    limits: LimitArgs,
}

#[derive(Debug, Args)]
struct ServersArgs {
    /// An MCP config file; without it, the files MCP clients write are discovered (see
    /// `toolweave config`).
    #[arg(long, short = 'c', value_name = "FILE", env = "TOOLWEAVE_CONFIG")]
    config: Option<PathBuf>,
    /// toolweave's settings file, whose boxes the servers start in; by default
    /// ~/.config/toolweave/settings.json when it exists.
    #[arg(long, value_name = "FILE", env = "TOOLWEAVE_SETTINGS")]
    settings: Option<PathBuf>,
    /// Time each server may take to start.
    #[arg(long, value_name = "MS", default_value_t = Limits::default().startup_timeout.as_millis() as u64)]
    startup_timeout_ms: u64,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Start the servers anew, even when a running `toolweave serve` with this config and these
    /// settings could answer.
    #[arg(long)]
    fresh: bool,
}

#[derive(Debug, Args)]
struct DoctorArgs {
    /// An MCP config file whose servers to check; without it, the discovered servers are checked.
    #[arg(long, short = 'c', value_name = "FILE", env = "TOOLWEAVE_CONFIG")]
    config: Option<PathBuf>,
    /// Time each server may take to start.
    #[arg(long, value_name = "MS", default_value_t = Limits::default().startup_timeout.as_millis() as u64)]
    startup_timeout_ms: u64,
    /// toolweave's settings file, whose rules are checked against the servers' tools; by default
    /// ~/.config/toolweave/settings.json when it exists.
    #[arg(long, value_name = "FILE", env = "TOOLWEAVE_SETTINGS")]
    settings: Option<PathBuf>,
    /// Start the servers anew, even when a running `toolweave serve` with this config and these
    /// settings could answer.
    #[arg(long)]
    fresh: bool,
}

#[derive(Debug, Args)]
struct CommonArgs {
    /// An MCP config file: {"mcpServers": {"name": {"command": ..., "args": [...]}}}. Without it,
    /// the files MCP clients write are discovered (see `toolweave config`).
    #[arg(long, short = 'c', value_name = "FILE", env = "TOOLWEAVE_CONFIG")]
    config: Option<PathBuf>,

    #[command(flatten)]
    limits: LimitArgs,

    /// Where JavaScript and TypeScript run: confined worker processes (a session's executions in
    /// workers kept for it), or engine threads of this process (for trusted code only; no
    /// faster). Python always runs in workers.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = IsolationArg::Worker)]
    isolation: IsolationArg,

    /// Run every execution in a fresh worker process. By default a session's executions run one
    /// after another in workers kept for that session (never another's), each in a fresh engine
    /// runtime; this keeps none, at about 1.5 ms of CPU per execution.
    #[arg(long)]
    fresh_workers: bool,

    /// Run guest code on a `toolweave runner` instead of this machine: a command whose stdin
    /// and stdout carry the protocol (`ssh build-host toolweave runner`), or tcp://HOST:PORT
    /// with --runner-token-env. Tools, secrets and limits stay here.
    #[arg(long, value_name = "RUNNER")]
    runner: Option<String>,

    /// The environment variable holding a TCP runner's token (its --token-env).
    #[arg(long, value_name = "NAME", requires = "runner")]
    runner_token_env: Option<String>,

    #[command(flatten)]
    policy: PolicyArgs,

    #[command(flatten)]
    llm: LlmArgs,
}

#[derive(Debug, Args)]
struct LlmArgs {
    /// Requests to the model's LLM (llm.ask, llm.think) one execution may send.
    #[arg(long, value_name = "N", default_value_t = toolweave_core::LlmOptions::default().max_rounds)]
    max_llm_rounds: u32,
    /// Tokens one execution's LLM requests may ask for, counted as the sum of their maxTokens.
    #[arg(long, value_name = "N", default_value_t = toolweave_core::LlmOptions::default().max_tokens)]
    max_llm_tokens: u64,
    /// Time one LLM request may take.
    #[arg(long, value_name = "MS", default_value_t = toolweave_core::LlmOptions::default().timeout.as_millis() as u64)]
    llm_timeout_ms: u64,
    /// A JSON file holding an array of the only system prompts code may send to the LLM (added
    /// to the settings file's "llmSystemPrompts"); a request must then send one of them exactly.
    #[arg(long, value_name = "FILE")]
    llm_system_prompts: Option<PathBuf>,
}

impl LlmArgs {
    /// How llm.ask and llm.think are answered: these flags and the settings' "llm" and
    /// "llmSystemPrompts".
    fn resolve(&self, settings: &toolweave_config::Settings) -> Result<toolweave_core::LlmOptions> {
        if self.llm_timeout_ms == 0 {
            bail!("--llm-timeout-ms must be greater than 0");
        }
        let mut prompts = settings.llm_system_prompts.clone();
        if let Some(path) = &self.llm_system_prompts {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("--llm-system-prompts {}", path.display()))?;
            let listed: Vec<String> = serde_json::from_str(&text).map_err(|error| {
                anyhow::anyhow!(
                    "--llm-system-prompts {}: {error}; the file must be a JSON array of strings, each a system prompt code may send",
                    path.display()
                )
            })?;
            prompts.get_or_insert_with(Vec::new).extend(listed);
        }
        if let Some(provider) = &settings.llm
            && !(provider.url.starts_with("http://") || provider.url.starts_with("https://"))
        {
            bail!(
                "the settings file's \"llm\": \"url\" {:?} must begin with http:// or https://",
                provider.url
            );
        }
        Ok(toolweave_core::LlmOptions {
            max_rounds: self.max_llm_rounds,
            max_tokens: self.max_llm_tokens,
            timeout: Duration::from_millis(self.llm_timeout_ms),
            system_prompts: prompts.map(|prompts| prompts.into_iter().collect()),
            provider: settings.llm.clone(),
        })
    }
}

#[derive(Debug, Args)]
struct PolicyArgs {
    /// toolweave's settings file (allow, deny, ask, approve, unannotated, auditLog); by default
    /// ~/.config/toolweave/settings.json when it exists.
    #[arg(long, value_name = "FILE", env = "TOOLWEAVE_SETTINGS")]
    settings: Option<PathBuf>,
    /// Let code call only tools matching this glob over server.tool (e.g. "github.*"; "*" is
    /// every tool); repeatable, added to the settings file's. Approves nothing.
    #[arg(long, value_name = "GLOB")]
    allow: Vec<String>,
    /// Keep tools matching this glob (e.g. "*.delete_*") from code: absent from search, describe
    /// and types, and refused when called. Repeatable; deny wins over allow.
    #[arg(long, value_name = "GLOB")]
    deny: Vec<String>,
    /// Ask the person at the client before each call of the tools matching this glob (e.g.
    /// "github.merge_*"), whatever their annotations; --approve does not apply to them. Lets the
    /// tools in beside --allow's. Repeatable, added to the settings file's; deny wins over it.
    #[arg(long, value_name = "GLOB")]
    ask: Vec<String>,
    /// Let code call the tools matching this glob that would ask because their server marks them
    /// destructive (or, with --unannotated ask, says nothing), e.g. "filesystem.write_file",
    /// without anyone being asked. Repeatable, added to the settings file's; it never lets in a
    /// tool that --allow or --deny keeps out, nor silences an --ask rule.
    #[arg(long, value_name = "GLOB")]
    approve: Vec<String>,
    /// Whether calls of tools whose server says nothing about what they change (neither
    /// readOnlyHint nor destructiveHint) ask the person at the client [default: allow, or the
    /// settings file's].
    #[arg(long, value_enum, value_name = "MODE")]
    unannotated: Option<UnannotatedArg>,
    /// Append one JSON line per execution to this file (who, when, code hash, tool calls,
    /// outcome).
    #[arg(long, value_name = "FILE")]
    audit_log: Option<PathBuf>,
    /// Rotate the audit log past this size [default: 10485760, or the settings file's].
    #[arg(long, value_name = "BYTES")]
    audit_log_max_bytes: Option<u64>,
    /// Write tool arguments and results into the audit log too (they may hold private data).
    #[arg(long)]
    audit_log_contents: bool,
    /// Pin each tool's definition the first time toolweave sees it, and hold a tool whose
    /// definition then changes until `toolweave trust` accepts it [default: on, or the settings
    /// file's "pinTools"].
    #[arg(long, value_enum, value_name = "MODE")]
    pin_tools: Option<PinToolsArg>,
    /// What a tool seen for the first time gets when its definition has instructions aimed at
    /// the model, directions to move data out or hidden text: held until `toolweave trust`
    /// accepts it, pinned with a warning, or not read [default: hold, or the settings file's
    /// "checkDefinitions"].
    #[arg(long, value_enum, value_name = "MODE")]
    check_definitions: Option<CheckDefinitionsArg>,
    /// Learn what tools without an output schema return from their calls (types and key names,
    /// kept beside the pins) and declare it as observed [default: on, or the settings file's
    /// "observeReturns"].
    #[arg(long, value_enum, value_name = "MODE")]
    observe_returns: Option<PinToolsArg>,
    /// Replace what this detector finds by a token (<email_1>) in everything the model reads;
    /// code still sees the values, and a token passed back in a tool's arguments is turned back
    /// into its value: secrets, email, phone, card, ssn, nino or iban. Repeatable, added to the
    /// settings file's "redact".
    #[arg(long, value_name = "DETECTOR", value_parser = clap::builder::ValueParser::new(parse_detector))]
    redact: Vec<toolweave_config::Detector>,
}

/// `--redact`'s value: a detector's name, or an error naming those there are.
fn parse_detector(name: &str) -> Result<toolweave_config::Detector, String> {
    name.parse()
}

/// `--check-definitions`' values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum CheckDefinitionsArg {
    Hold,
    Warn,
    Off,
}

/// `--pin-tools`' and `--observe-returns`' values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum PinToolsArg {
    On,
    Off,
}

/// `--unannotated`'s values: calls go ahead without asking, or each asks as a destructive
/// tool's does (unless --approve matches it). Undocumented one by one, so `--help` keeps its
/// short form.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum UnannotatedArg {
    Allow,
    Ask,
}

/// Size at which the audit log is rotated when nothing says otherwise.
const DEFAULT_AUDIT_LOG_MAX_BYTES: u64 = 10 * 1024 * 1024;

impl PolicyArgs {
    /// The settings file (named, or the default one when it exists), with the flags added.
    fn settings(&self) -> Result<toolweave_config::Settings> {
        let mut settings = settings_file(self.settings.as_deref())?;
        settings.allow.extend(self.allow.iter().cloned());
        settings.deny.extend(self.deny.iter().cloned());
        settings.approve.extend(self.approve.iter().cloned());
        settings.ask.extend(self.ask.iter().cloned());
        settings.redact.extend(self.redact.iter().copied());
        if let Some(mode) = self.unannotated {
            settings.unannotated = Some(match mode {
                UnannotatedArg::Allow => toolweave_config::Unannotated::Allow,
                UnannotatedArg::Ask => toolweave_config::Unannotated::Ask,
            });
        }
        if let Some(path) = &self.audit_log {
            settings.audit_log = Some(path.clone());
        }
        if let Some(bytes) = self.audit_log_max_bytes {
            settings.audit_log_max_bytes = Some(bytes);
        }
        settings.audit_log_contents |= self.audit_log_contents;
        if let Some(mode) = self.check_definitions {
            settings.check_definitions = Some(match mode {
                CheckDefinitionsArg::Hold => toolweave_config::CheckDefinitions::Hold,
                CheckDefinitionsArg::Warn => toolweave_config::CheckDefinitions::Warn,
                CheckDefinitionsArg::Off => toolweave_config::CheckDefinitions::Off,
            });
        }
        if let Some(mode) = self.observe_returns {
            settings.observe_returns = Some(match mode {
                PinToolsArg::On => toolweave_config::ObserveReturns::On,
                PinToolsArg::Off => toolweave_config::ObserveReturns::Off,
            });
        }
        if let Some(mode) = self.pin_tools {
            settings.pin_tools = Some(match mode {
                PinToolsArg::On => toolweave_config::PinTools::On,
                PinToolsArg::Off => toolweave_config::PinTools::Off,
            });
        }
        Ok(settings)
    }
}

/// The audit log the settings ask for, opened.
fn audit_log(settings: &toolweave_config::Settings) -> Result<Option<toolweave_core::AuditLog>> {
    let Some(path) = &settings.audit_log else {
        return Ok(None);
    };
    let max_bytes = settings
        .audit_log_max_bytes
        .unwrap_or(DEFAULT_AUDIT_LOG_MAX_BYTES);
    if max_bytes == 0 {
        bail!("--audit-log-max-bytes (auditLogMaxBytes) must be greater than 0");
    }
    let log = toolweave_core::AuditLog::open(toolweave_core::AuditOptions {
        path: path.clone(),
        max_bytes,
        contents: settings.audit_log_contents,
    })
    .map_err(|error| anyhow::anyhow!("{error}"))?;
    tracing::info!(path = %path.display(), "recording every execution in the audit log");
    Ok(Some(log))
}

// Engine threads of the gateway process, or confined worker processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum IsolationArg {
    InProcess,
    Worker,
}

#[derive(Debug, Args)]
struct LimitArgs {
    /// Wall-clock limit for one execution, tool calls included.
    #[arg(long, value_name = "MS", default_value_t = Limits::default().timeout.as_millis() as u64)]
    timeout_ms: u64,
    /// Heap limit for guest code.
    #[arg(long, value_name = "MB", default_value_t = Limits::default().memory_bytes / (1024 * 1024))]
    memory_mb: usize,
    /// Stack limit for guest code (bounds recursion).
    #[arg(long, value_name = "KB", default_value_t = Limits::default().stack_bytes / 1024)]
    stack_kb: usize,
    /// Console output kept per execution; more ends the execution.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_log_bytes)]
    max_log_bytes: usize,
    /// Largest result, as JSON.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_result_bytes)]
    max_result_bytes: usize,
    /// Upstream tool calls one execution may make.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_tool_calls)]
    max_tool_calls: u32,
    /// Calls of any one tool one execution may make.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_calls_per_tool)]
    max_calls_per_tool: u32,
    /// Bytes of tool results one execution may receive from upstream servers.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_upstream_bytes)]
    max_upstream_bytes: u64,
    /// Time one upstream tool call may take.
    #[arg(long, value_name = "MS", default_value_t = Limits::default().tool_call_timeout.as_millis() as u64)]
    tool_timeout_ms: u64,
    /// Time a call waits for its upstream server to start.
    #[arg(long, value_name = "MS", default_value_t = Limits::default().startup_timeout.as_millis() as u64)]
    startup_timeout_ms: u64,
    /// Bytes of keys and values (as JSON) one session's store may hold.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_store_bytes)]
    max_store_bytes: usize,
    /// Keys one session's store may hold.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_store_keys)]
    max_store_keys: usize,
    /// Bytes of results (as JSON) one session keeps behind handles; 0 keeps none.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_handle_bytes)]
    max_handle_bytes: usize,
    /// How long a result handle is kept after it is made.
    #[arg(long, value_name = "MS", default_value_t = Limits::default().handle_ttl.as_millis() as u64)]
    handle_ttl_ms: u64,
    /// How long a session named by handles (HTTP without an MCP session) is kept unused, and
    /// how long each handle of it is valid.
    #[arg(long, value_name = "MS", default_value_t = Limits::default().session_ttl.as_millis() as u64)]
    session_ttl_ms: u64,
    /// Content blocks (images, audio) one execution's answer may carry, from emit(block) and a
    /// returned block.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_emitted_blocks)]
    max_emitted_blocks: usize,
    /// Bytes of those blocks, their base64 data as sent.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_emitted_bytes)]
    max_emitted_bytes: usize,
}

impl LimitArgs {
    fn resolve(&self) -> Result<Limits> {
        if self.timeout_ms == 0
            || self.tool_timeout_ms == 0
            || self.startup_timeout_ms == 0
            || self.handle_ttl_ms == 0
            || self.session_ttl_ms == 0
        {
            bail!(
                "--timeout-ms, --tool-timeout-ms, --startup-timeout-ms, --handle-ttl-ms and \
                 --session-ttl-ms must be greater than 0"
            );
        }
        if self.max_calls_per_tool == 0 || self.max_upstream_bytes == 0 {
            bail!("--max-calls-per-tool and --max-upstream-bytes must be greater than 0");
        }
        if self.memory_mb < 2 {
            bail!("--memory-mb must be at least 2");
        }
        if self.stack_kb < 64 {
            bail!("--stack-kb must be at least 64");
        }
        Ok(Limits {
            timeout: Duration::from_millis(self.timeout_ms),
            memory_bytes: self.memory_mb * 1024 * 1024,
            stack_bytes: self.stack_kb * 1024,
            max_log_bytes: self.max_log_bytes,
            max_result_bytes: self.max_result_bytes,
            max_tool_calls: self.max_tool_calls,
            max_calls_per_tool: self.max_calls_per_tool,
            max_upstream_bytes: self.max_upstream_bytes,
            tool_call_timeout: Duration::from_millis(self.tool_timeout_ms),
            startup_timeout: Duration::from_millis(self.startup_timeout_ms),
            max_store_bytes: self.max_store_bytes,
            max_store_keys: self.max_store_keys,
            max_handle_bytes: self.max_handle_bytes,
            handle_ttl: Duration::from_millis(self.handle_ttl_ms),
            session_ttl: Duration::from_millis(self.session_ttl_ms),
            max_emitted_blocks: self.max_emitted_blocks,
            max_emitted_bytes: self.max_emitted_bytes,
        })
    }
}

#[derive(Debug, Args)]
struct ServeArgs {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    shape: ShapeArgs,
    #[command(flatten)]
    http: HttpArgs,
    #[command(flatten)]
    observe: ObserveArgs,
    #[command(flatten)]
    approval: crate::approve::ApprovalArgs,
}

#[derive(Debug, Args)]
struct ShapeArgs {
    /// The tools clients are shown: `three` (search_tools, describe_tools and execute_code, for
    /// any number of upstream tools) or `single` (execute_code alone, its description declaring
    /// every tool: for a few small servers) [default: three, or the settings file's "shape"].
    #[arg(long, value_enum, value_name = "SHAPE")]
    shape: Option<ShapeArg>,
    /// Also list the upstream tools matching this glob over server.tool (e.g.
    /// "memory.read_graph") directly, as server__tool with their own descriptions and schemas;
    /// a call goes through the policy, approval, limits and audit log as one from code does.
    /// Repeatable, added to the settings file's "direct".
    #[arg(long, value_name = "GLOB")]
    direct: Vec<String>,
}

// The tools `serve` lists (see `toolweave_config::Shape`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ShapeArg {
    Three,
    Single,
}

impl ShapeArgs {
    /// What `serve` lists: the flags over the settings file's "shape" and "direct".
    fn resolve(
        &self,
        settings: &toolweave_config::Settings,
    ) -> Result<toolweave_server::ToolsOptions> {
        let shape = match self.shape {
            Some(ShapeArg::Three) => toolweave_config::Shape::Three,
            Some(ShapeArg::Single) => toolweave_config::Shape::Single,
            None => settings.shape.unwrap_or_default(),
        };
        let mut globs = settings.direct.clone();
        globs.extend(self.direct.iter().cloned());
        let direct = toolweave_config::ToolGlobs::new(&globs, "--direct")
            .map_err(|error| anyhow::anyhow!("{error}"))?;
        Ok(toolweave_server::ToolsOptions { shape, direct })
    }
}

#[derive(Debug, Args)]
struct ObserveArgs {
    /// Serve Prometheus metrics at /metrics on the --http listener (behind its bearer token, like
    /// MCP), or on --metrics-address.
    #[arg(long)]
    metrics: bool,
    /// Serve metrics at http://ADDRESS/metrics, apart from MCP and without a token (for the
    /// monitoring network; works with stdio serving too). Implies --metrics.
    #[arg(long, value_name = "ADDRESS")]
    metrics_address: Option<std::net::SocketAddr>,
    /// Export traces over OTLP (HTTP, protobuf) to the collector at this URL (e.g.
    /// http://127.0.0.1:4318): a span per execution, tool call and upstream request, joined to
    /// the caller's trace when its request carries `traceparent` in `_meta`.
    #[arg(long, value_name = "URL")]
    otlp_endpoint: Option<String>,
}

#[derive(Debug, Args)]
struct HttpArgs {
    /// Serve MCP over streamable HTTP at http://ADDRESS/mcp instead of stdio (e.g.
    /// 127.0.0.1:8080). An address other than loopback needs --auth-token-env.
    #[arg(long, value_name = "ADDRESS")]
    http: Option<std::net::SocketAddr>,
    /// Require `Authorization: Bearer <token>` on every HTTP request but the health probes'
    /// (/healthz, /readyz), with the token read from this environment variable.
    #[arg(long, value_name = "VAR", requires = "http")]
    auth_token_env: Option<String>,
    /// Accept this `Host` (name or name:port) besides localhost and the bound address; for a
    /// gateway reached by a DNS name. Repeatable.
    #[arg(long, value_name = "HOST", requires = "http")]
    allowed_host: Vec<String>,
    /// Accept requests from browser pages of this origin (e.g. https://app.example.com:443)
    /// besides pages on this machine. Repeatable.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allowed_origin: Vec<String>,
    /// Executions one client session may start per minute (a burst of that many, then refilled
    /// evenly); more are refused with the time to wait. With --stateless, for the whole process.
    #[arg(long, value_name = "PER_MINUTE")]
    rate_limit: Option<std::num::NonZeroU32>,
    /// Keep no sessions: every HTTP request stands alone, so a load balancer that cannot pin a
    /// client to one copy can send each request anywhere. Gives up what needs a session: asking
    /// the person to approve destructive calls, the log level a client sets, and cancelling a
    /// request other than by closing its connection.
    #[arg(long, requires = "http", conflicts_with = "session_id_prefix")]
    stateless: bool,
    /// Begin every session id with NAME and a dot, so a load balancer that cannot remember
    /// which copy opened a session (open-source nginx) can route by the id alone. Give each
    /// copy its own name (letters, digits, '-', '_').
    #[arg(long, value_name = "NAME", requires = "http")]
    session_id_prefix: Option<String>,
    /// Keep the store, result handles, session handles and which copy holds each paused
    /// execution in Redis or Valkey (redis://HOST:PORT/N), shared by every copy given the same
    /// URL, so any copy serves any request (also the settings' "state"). Without it they stay in
    /// this process's memory.
    #[arg(long, value_name = "URL", requires = "http")]
    state: Option<String>,
    /// The MCP address the other copies reach this one at (http://HOST:PORT/mcp), to hand it the
    /// retries of executions it holds; with --state. By default the --http address, which then
    /// must be one they can reach (not 0.0.0.0 or [::]).
    #[arg(long, value_name = "URL", requires = "http")]
    advertise: Option<String>,
}

impl HttpArgs {
    fn resolve(
        &self,
        address: std::net::SocketAddr,
    ) -> Result<toolweave_server::http::HttpOptions> {
        let token = match &self.auth_token_env {
            None => None,
            Some(variable) => {
                let value = std::env::var(variable).map_err(|_| {
                    anyhow::anyhow!(
                        "--auth-token-env {variable}: the environment variable {variable} is not set (or not UTF-8); set it to the token clients must send"
                    )
                })?;
                Some(toolweave_server::http::BearerToken::new(&value).with_context(|| {
                    format!("--auth-token-env {variable}: the environment variable {variable} is empty; set it to the token clients must send")
                })?)
            }
        };
        Ok(toolweave_server::http::HttpOptions {
            address,
            token,
            identities: Vec::new(),
            allowed_hosts: self.allowed_host.clone(),
            allowed_origins: self.allowed_origin.clone(),
            stateless: self.stateless,
            session_id_prefix: self
                .session_id_prefix
                .as_deref()
                .map(toolweave_server::sessions::session_id_prefix)
                .transpose()?,
            metrics: None,
        })
    }
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The program: a .ts, .js or .py file, or `-` for standard input.
    file: PathBuf,
    /// The language, when the file name does not tell (typescript, javascript, python).
    #[arg(long, short = 'l')]
    language: Option<String>,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Debug, Args)]
struct ToolsArgs {
    /// What to look for; empty lists every tool.
    #[arg(default_value = "")]
    query: String,
    /// How many results.
    #[arg(long, default_value_t = toolweave_catalog::DEFAULT_SEARCH_LIMIT)]
    limit: usize,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Show Python signatures instead of TypeScript ones.
    #[arg(long)]
    python: bool,
    /// Start the servers anew, even when a running `toolweave serve` with this config and these
    /// settings could answer.
    #[arg(long)]
    fresh: bool,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Debug, Args)]
struct TypesArgs {
    /// Print Python stubs (.pyi style) instead of TypeScript declarations.
    #[arg(long)]
    python: bool,
    /// Start the servers anew, even when a running `toolweave serve` with this config and these
    /// settings could answer.
    #[arg(long)]
    fresh: bool,
    #[command(flatten)]
    common: CommonArgs,
}

/// Parses arguments, runs the command, maps failure to exit code 1 (2 for usage errors).
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // The gateway's threads are the protocol thread, short-lived blocking threads that build
    // catalogs, and (in process) engine threads. With one arena, what a build frees is reused by
    // what comes after it, not stranded in the arena of the thread that built it; engine threads
    // allocate mostly small blocks, which glibc's per-thread caches serve without the arena lock.
    if matches!(cli.command, Command::Serve(_)) {
        toolweave_core::limit_malloc_arenas(1);
    }
    let default_level = match cli.command {
        Command::Serve(_) => "info",
        // A login connects expecting to be refused; what it finds, it says itself.
        Command::Login(_) | Command::Logout(_) => "error,rmcp::transport::worker=off",
        _ => "warn",
    };
    let filter =
        EnvFilter::try_from_env("TOOLWEAVE_LOG").unwrap_or_else(|_| EnvFilter::new(default_level));
    // rmcp's OAuth module logs the authorization code at debug level: never below info.
    let filter = match "rmcp::transport::auth=info".parse() {
        Ok(directive) => filter.add_directive(directive),
        Err(_) => filter,
    };
    let endpoint = match &cli.command {
        Command::Serve(args) => args.observe.otlp_endpoint.as_deref(),
        _ => None,
    };
    let traces = match endpoint {
        Some(endpoint) => match toolweave_server::telemetry::Traces::start(endpoint) {
            Ok(traces) => Some(traces),
            Err(error) => {
                eprintln!("toolweave: {error}");
                return ExitCode::FAILURE;
            }
        },
        None => None,
    };
    {
        use tracing_subscriber::Layer;
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        // Logs go to stderr: in `serve`, stdout carries the protocol and nothing else.
        let logs = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .compact()
            .with_filter(filter);
        tracing_subscriber::registry()
            .with(logs)
            .with(
                traces
                    .as_ref()
                    .map(toolweave_server::telemetry::Traces::layer),
            )
            .init();
    }

    // One thread for protocol and upstream I/O: guest code runs on engine threads of its own,
    // and keeping every task on one thread saves a cross-thread wake-up per message (what that
    // is worth: docs/benchmarks.md, "Figures behind choices in the code").
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("toolweave")
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("toolweave: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(dispatch(cli.command));
    // Upstream children and engine threads must not keep the process alive.
    runtime.shutdown_timeout(Duration::from_millis(500));
    if let Some(traces) = traces {
        traces.shutdown();
    }
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("toolweave: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn dispatch(command: Command) -> Result<ExitCode> {
    match command {
        Command::Serve(args) => serve(*args).await,
        Command::Run(args) => run(args).await,
        Command::Tools(args) => tools(args).await,
        Command::Types(args) => types(args).await,
        Command::Doctor(args) => doctor(args).await,
        Command::Servers(args) => servers(args).await,
        Command::Config(args) => crate::setup::config(args),
        Command::Init(args) => crate::setup::init(args),
        Command::Trust(args) => crate::setup::trust(args),
        Command::Login(args) => crate::login::login(args).await,
        Command::Logout(args) => crate::login::logout(args).await,
        Command::Runner(args) => serve_runner(args).await,
        Command::Approve(args) => crate::approve::approve(args).await,
    }
}

/// Starts the gateway for `client_sessions` (whom it serves decides what upstream servers are
/// told it supports).
fn start(common: &CommonArgs, client_sessions: ClientSessions) -> Result<Arc<Gateway>> {
    start_loaded(common, common.load()?, client_sessions)
}

/// What a gateway starts from: the limits and the settings with the flags added, and the
/// servers.
struct Loaded {
    limits: Limits,
    settings: toolweave_config::Settings,
    config: Config,
}

impl Loaded {
    /// What a running gateway must have started from to answer for this command.
    fn fingerprint(&self) -> String {
        crate::live::fingerprint(&self.config, &self.settings, self.limits.max_result_bytes)
    }
}

impl CommonArgs {
    fn load(&self) -> Result<Loaded> {
        let limits = self.limits.resolve()?;
        let settings = self.policy.settings()?;
        let config = load_config(self.config.as_deref(), &settings)?;
        Ok(Loaded {
            limits,
            settings,
            config,
        })
    }

    /// Which running gateway may answer for this command.
    fn key(&self) -> crate::live::Key<'_> {
        crate::live::Key {
            config: self.config.as_deref(),
            settings: self.policy.settings.as_deref(),
        }
    }
}

/// [`start`], from what was loaded already.
fn start_loaded(
    common: &CommonArgs,
    loaded: Loaded,
    client_sessions: ClientSessions,
) -> Result<Arc<Gateway>> {
    let Loaded {
        limits,
        settings,
        config,
    } = loaded;
    for disabled in &config.disabled {
        tracing::info!(server = %disabled, "server is disabled in the config; skipped");
    }
    let policy = policy_of(&settings)?;
    if policy.describe() != toolweave_config::Policy::default().describe() {
        tracing::info!(policy = %policy.describe(), "tool policy");
    }
    let mut builder = Gateway::builder()
        .mcp_servers(&config)
        .client_sessions(client_sessions)
        .limits(limits)
        .llm(common.llm.resolve(&settings)?)
        .redact(&settings.redact)
        .policy(policy);
    if !settings.redact.is_empty() {
        let detectors: Vec<&str> = settings.redact.iter().map(|d| d.as_str()).collect();
        tracing::info!(detectors = %detectors.join(", "), "redacting what the model reads");
    }
    if let Some(audit) = audit_log(&settings)? {
        builder = builder.audit(audit);
    }
    if settings.pin_tools.unwrap_or_default() == toolweave_config::PinTools::On {
        match crate::machine::pins_folder() {
            Some(path) => {
                builder = builder.pins(path, settings.check_definitions.unwrap_or_default());
            }
            None => tracing::warn!(
                "tool definitions are not pinned: neither HOME nor XDG_CONFIG_HOME is set, so there is no place to keep them"
            ),
        }
    }
    if settings.observe_returns.unwrap_or_default() == toolweave_config::ObserveReturns::On
        && let Some(path) = crate::machine::observed_folder()
    {
        builder = builder.observe_returns(path);
    }
    let gateway = if let Some(runner) = runner(common)? {
        tracing::info!(runner = %runner.describe(), "guest code runs on a runner");
        builder.runner(runner).build()?
    } else {
        let isolation = match common.isolation {
            IsolationArg::InProcess => Isolation::InProcess,
            IsolationArg::Worker => Isolation::Worker,
        };
        match worker_command() {
            Some(command) => {
                builder = builder
                    .worker(command)
                    .isolation(isolation)
                    .fresh_workers(common.fresh_workers);
            }
            // Without workers everything runs on engine threads, as it would have to anyway.
            None => builder = builder.isolation(Isolation::InProcess),
        }
        builder.build()?
    };
    warn_unmatched_rules(&gateway, &settings);
    Ok(gateway)
}

/// Logs each rule of the settings and their identities that matches no tool, once every server
/// is ready or failed.
fn warn_unmatched_rules(gateway: &Arc<Gateway>, settings: &toolweave_config::Settings) {
    let Ok(identities) = identity_rules(settings) else {
        // The identities' own rules are refused with their cause where they are compiled.
        return;
    };
    let gateway = Arc::downgrade(gateway);
    tokio::spawn(async move {
        let Some(upstream) = gateway.upgrade().map(|gateway| gateway.upstream().clone()) else {
            return;
        };
        upstream.settle().await;
        let Some(gateway) = gateway.upgrade() else {
            return;
        };
        for warning in gateway.unmatched_rules(&identities, None).await {
            tracing::warn!("{warning}");
        }
    });
}

/// The identities of the settings, each with its token from its environment variable and its
/// rules set within the settings' own. `Err` names the identity and what to change.
fn identities(
    settings: &toolweave_config::Settings,
) -> Result<Vec<Arc<toolweave_server::http::IdentityToken>>> {
    let outer = Arc::new(policy_of(settings)?);
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut identities = Vec::new();
    for (name, identity) in &settings.identities {
        let variable = &identity.token_env;
        let value = std::env::var(variable).map_err(|_| {
            anyhow::anyhow!(
                "identity \"{name}\": the environment variable {variable} (its tokenEnv) is not set (or not UTF-8); set it to the token this identity's clients send"
            )
        })?;
        let token = toolweave_server::http::BearerToken::new(&value).with_context(|| {
            format!("identity \"{name}\": the environment variable {variable} (its tokenEnv) is empty; set it to the token this identity's clients send")
        })?;
        if let Some((other, _)) = seen.iter().find(|(_, seen)| seen.trim() == value.trim()) {
            bail!(
                "identities \"{other}\" and \"{name}\" have the same token; give each identity a token of its own"
            );
        }
        seen.push((name.clone(), value));
        let own = rules(
            &identity.allow,
            &identity.deny,
            &identity.ask,
            &identity.approve,
        )
        .with_context(|| format!("identity \"{name}\""))?
        .with_unannotated(
            identity
                .unannotated
                .or(settings.unannotated)
                .unwrap_or_default(),
        );
        identities.push(Arc::new(toolweave_server::http::IdentityToken::new(
            token,
            toolweave_core::Identity::new(name.clone(), own, outer.clone()),
            identity.rate_limit,
        )));
    }
    Ok(identities)
}

/// The runner `--runner` names, if any.
fn runner(common: &CommonArgs) -> Result<Option<toolweave_core::Runner>> {
    let Some(given) = &common.runner else {
        return Ok(None);
    };
    if let Some(address) = given.strip_prefix("tcp://") {
        let Some(name) = &common.runner_token_env else {
            bail!(
                "--runner {given}: a TCP runner needs its token: --runner-token-env NAME, with the token in that variable"
            );
        };
        let token = std::env::var(name).map_err(|_| {
            anyhow::anyhow!("--runner-token-env {name}: the variable {name} is not set; set it to the runner's token")
        })?;
        return Ok(Some(toolweave_core::Runner::tcp(address, token)));
    }
    if common.runner_token_env.is_some() {
        bail!(
            "--runner-token-env is for a tcp:// runner; a command's own transport (ssh) authenticates it"
        );
    }
    let words = shlex::split(given)
        .filter(|words| !words.is_empty())
        .ok_or_else(|| {
            anyhow::anyhow!("--runner {given:?}: not a command line (check its quotes)")
        })?;
    Ok(Some(toolweave_core::Runner::command(
        &words[0],
        words[1..].iter().cloned(),
    )))
}

/// `toolweave runner`: serves executions on stdin and stdout, or on TCP.
async fn serve_runner(args: RunnerArgs) -> Result<ExitCode> {
    let limits = args.limits.resolve()?;
    let token = match (&args.listen, &args.token_env) {
        (_, Some(name)) => Some(std::env::var(name).map_err(|_| {
            anyhow::anyhow!("--token-env {name}: the variable {name} is not set; set it to the token gateways greet this runner with")
        })?),
        (Some(_), None) => bail!("--listen needs a token: --token-env NAME, with the token in that variable (give gateways the same with --runner-token-env)"),
        (None, None) => None,
    };
    if token.as_deref().is_some_and(|token| token.len() < 16) {
        bail!("--token-env: the token is shorter than 16 characters; use a long random one");
    }
    let worker = toolweave_core::worker_command()
        .map_err(|error| anyhow::anyhow!("cannot find this program to start workers: {error}"))?;
    let service = Arc::new(toolweave_core::RunnerService::new(worker, limits, token));
    let Some(address) = args.listen else {
        service
            .serve(tokio::io::stdin(), tokio::io::stdout())
            .await
            .context("serving stdin and stdout")?;
        return Ok(ExitCode::SUCCESS);
    };
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("--listen {address}"))?;
    let bound = listener.local_addr()?;
    eprintln!("toolweave runner: listening on {bound}");
    loop {
        let (stream, peer) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        tokio::spawn(async move {
            let (read, write) = stream.into_split();
            if let Err(error) = service.serve(read, write).await {
                tracing::warn!(%peer, %error, "a gateway's connection failed");
            }
        });
    }
}

/// This binary, re-entered as a worker (see `main.rs`).
fn worker_command() -> Option<WorkerCommand> {
    toolweave_core::worker_command()
        .map_err(|error| {
            tracing::warn!(%error, "cannot find this program to start worker processes; guest code runs in process, and Python has no memory limit");
        })
        .ok()
}

/// The servers `path` (or discovery) names, with the boxes `settings` gives those whose entries
/// have none of their own.
fn load_config(path: Option<&Path>, settings: &toolweave_config::Settings) -> Result<Config> {
    let mut config = crate::machine::load_config(path)?;
    for name in config.give_boxes(&settings.boxes) {
        tracing::warn!(
            server = %name,
            "the settings file's \"boxes\" names \"{name}\", which is no stdio server here (only a server toolweave starts can be boxed); check the name against `toolweave servers`"
        );
    }
    Ok(config)
}

async fn serve(args: ServeArgs) -> Result<ExitCode> {
    let observe = &args.observe;
    if observe.metrics && args.http.http.is_none() && observe.metrics_address.is_none() {
        bail!(
            "--metrics serves /metrics on the --http listener; serving over stdio, give --metrics-address ADDRESS for metrics of their own"
        );
    }
    let metrics = (observe.metrics || observe.metrics_address.is_some())
        .then(|| Arc::new(toolweave_server::metrics::Metrics::new()));
    // Checked before anything starts, so a refused address starts no upstream server.
    let metrics_listener = match observe.metrics_address {
        Some(address) => Some(toolweave_server::metrics::MetricsListener::bind(address).await?),
        None => None,
    };
    let settings = args.common.policy.settings()?;
    let listener = bind_http(
        &args.http,
        &settings,
        metrics.as_ref(),
        metrics_listener.is_some(),
    )
    .await?;
    let client_sessions = match listener {
        Some(_) => ClientSessions::Many,
        None => ClientSessions::One,
    };
    if listener.is_none() && !settings.identities.is_empty() {
        tracing::warn!(
            "the settings file names identities, which tell HTTP clients apart by their tokens; over stdio there is one client, and the settings' own rules apply"
        );
    }
    let tools = args.shape.resolve(&settings)?;
    let approval = args.approval.resolve(&settings)?;
    let loaded = args.common.load()?;
    let fingerprint = loaded.fingerprint();
    let identities = identity_rules(&loaded.settings)?;
    let has_rules = !policy_of(&loaded.settings)?.names_no_tool() || !identities.is_empty();
    let gateway = start_loaded(&args.common, loaded, client_sessions)?;
    // Answers `toolweave tools`, `types`, `servers` and `doctor` until the gateway stops.
    let published = crate::live::publish(
        &args.common.key(),
        crate::live::Serving {
            gateway: gateway.clone(),
            fingerprint,
            identities,
            has_rules,
        },
    )
    .await;
    let bound = listener
        .as_ref()
        .map(toolweave_server::http::HttpListener::local_address);
    let mut server = toolweave_server::ToolweaveServer::new(gateway.clone())
        .with_tools(tools)
        .with_approval(approval);
    server = with_serving_options(server, &args.http, &settings, bound, metrics.as_ref()).await?;
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(stop_on_signal(stop.clone()));
    // Metrics are served until everything else has ended, drain included.
    let metrics_stop = tokio_util::sync::CancellationToken::new();
    let metrics_served = match (metrics_listener, &metrics) {
        (Some(metrics_listener), Some(metrics)) => Some(tokio::spawn(metrics_listener.serve(
            metrics.clone(),
            gateway.clone(),
            metrics_stop.clone(),
        ))),
        _ => None,
    };
    match listener {
        Some(listener) => listener.serve(server, stop).await,
        None => serve_stdio(server, &stop).await?,
    }
    metrics_stop.cancel();
    if let Some(served) = metrics_served {
        let _ = served.await;
    }
    drop(published);
    gateway.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// `server` with what serving adds: the rate limit, shared state and metrics. `bound` is the
/// HTTP listener's address; over stdio (`None`) there is one client session.
async fn with_serving_options(
    mut server: toolweave_server::ToolweaveServer,
    http: &HttpArgs,
    settings: &toolweave_config::Settings,
    bound: Option<std::net::SocketAddr>,
    metrics: Option<&Arc<toolweave_server::metrics::Metrics>>,
) -> Result<toolweave_server::ToolweaveServer> {
    if let Some(per_minute) = http.rate_limit {
        server = server.with_rate_limit(per_minute);
    }
    if let Some((state, own)) = shared_state(http, settings, bound)? {
        server = server
            .with_state(state, own)
            .await
            .map_err(anyhow::Error::msg)?;
    }
    if let Some(metrics) = metrics {
        server = server.with_metrics(metrics.clone());
        if bound.is_none() {
            metrics.fixed_sessions(1);
        }
    }
    Ok(server)
}

/// The backend `--state` (or the settings' `state`) names, and this copy's MCP address as the
/// other copies reach it; `None` without one.
fn shared_state(
    http: &HttpArgs,
    settings: &toolweave_config::Settings,
    bound: Option<std::net::SocketAddr>,
) -> Result<Option<(Arc<toolweave_server::shared::SharedState>, String)>> {
    let Some(url) = http.state.as_deref().or(settings.state.as_deref()) else {
        return Ok(None);
    };
    let Some(address) = bound else {
        tracing::warn!(
            "the settings' \"state\" is for copies served over HTTP; over stdio the process is the session, and state stays in its memory"
        );
        return Ok(None);
    };
    let state = toolweave_server::shared::SharedState::open(url).map_err(anyhow::Error::msg)?;
    let own = match &http.advertise {
        Some(own) if own.starts_with("http://") || own.starts_with("https://") => own.clone(),
        Some(own) => bail!(
            "--advertise {own}: give the URL the other copies reach this one's MCP endpoint at, http://HOST:PORT/mcp"
        ),
        None if address.ip().is_unspecified() => bail!(
            "--state: --http {address} listens on every address, so the other copies cannot tell which reaches this one; give --advertise http://HOST:PORT/mcp"
        ),
        None => format!("http://{address}/mcp"),
    };
    Ok(Some((state, own)))
}

/// The HTTP listener `--http` asks for, bound, with the settings' identities; `metrics` are
/// served on it unless they have a `metrics_listener` of their own.
async fn bind_http(
    http: &HttpArgs,
    settings: &toolweave_config::Settings,
    metrics: Option<&Arc<toolweave_server::metrics::Metrics>>,
    metrics_listener: bool,
) -> Result<Option<toolweave_server::http::HttpListener>> {
    let Some(address) = http.http else {
        return Ok(None);
    };
    let mut options = http.resolve(address)?;
    options.identities = identities(settings)?;
    if let Some(variable) = &http.auth_token_env
        && let Ok(value) = std::env::var(variable)
        && options
            .identities
            .iter()
            .any(|identity| identity.matches(value.trim().as_bytes()))
    {
        bail!(
            "--auth-token-env {variable} holds the same token as an identity of the settings file; give the identities tokens of their own"
        );
    }
    if !metrics_listener {
        options.metrics = metrics.cloned();
    }
    Ok(Some(toolweave_server::http::bind(options).await?))
}

/// Serves one client over stdio until it disconnects or `stop` fires (then drains).
async fn serve_stdio(
    server: toolweave_server::ToolweaveServer,
    stop: &tokio_util::sync::CancellationToken,
) -> Result<()> {
    let service = server
        .clone()
        .serve(toolweave_server::stdio::transport())
        .await
        .context("MCP session over stdio did not start")?;
    let session = service.cancellation_token();
    let waiting = service.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        quit = &mut waiting => tracing::info!(?quit, "client disconnected"),
        () = stop.cancelled() => {
            if !server.drain(toolweave_server::http::SHUTDOWN_GRACE).await {
                tracing::warn!("executions still running after the grace period are cancelled");
            }
            session.cancel();
            let _ = waiting.await;
        }
    }
    Ok(())
}

/// Fires `stop` on SIGINT or SIGTERM.
async fn stop_on_signal(stop: tokio_util::sync::CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut interrupt), Ok(mut terminate)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            tracing::warn!(
                "cannot listen for SIGINT and SIGTERM; stop toolweave by closing its input"
            );
            return;
        };
        let name = tokio::select! {
            _ = interrupt.recv() => "SIGINT",
            _ = terminate.recv() => "SIGTERM",
        };
        tracing::info!(signal = name, "stopping");
    }
    #[cfg(not(unix))]
    {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        tracing::info!("stopping");
    }
    stop.cancel();
}

async fn run(args: RunArgs) -> Result<ExitCode> {
    let language = match &args.language {
        Some(name) => Language::from_name(name).with_context(|| {
            format!("unknown --language {name:?}: use typescript, javascript or python")
        })?,
        None => language_of(&args.file)?,
    };
    let code = if args.file.as_os_str() == "-" {
        let mut code = String::new();
        std::io::stdin()
            .read_to_string(&mut code)
            .context("cannot read the program from standard input")?;
        code
    } else {
        std::fs::read_to_string(&args.file)
            .with_context(|| format!("cannot read {}", args.file.display()))?
    };
    let gateway = start(&args.common, ClientSessions::None)?;
    let report = gateway
        .execute(
            code,
            language,
            ExecuteOptions {
                session: "run".to_owned(),
                ..ExecuteOptions::default()
            },
        )
        .await;
    for line in &report.logs {
        if line.stream == "log" {
            eprintln!("{}", line.text);
        } else {
            eprintln!("[{}] {}", line.stream, line.text);
        }
    }
    // Blocks are not printable: each is named by a line, after the console lines.
    for (index, block) in report.blocks.iter().enumerate() {
        eprintln!("[block {}] {}", index + 1, describe_block(block));
    }
    gateway.shutdown().await;
    match report.result {
        Ok(value) => {
            let mut stdout = std::io::stdout().lock();
            writeln!(stdout, "{}", serde_json::to_string_pretty(&value)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            eprintln!("toolweave: {error}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// One content block of an answer, as `run` names it: `image image/png, 1824 bytes`.
fn describe_block(block: &rmcp::model::ContentBlock) -> String {
    use rmcp::model::ContentBlock;
    // Base64 with padding: three bytes for every four characters, less the padding.
    let decoded = |data: &str| {
        let padding = data.bytes().rev().take_while(|&byte| byte == b'=').count();
        (data.len() / 4 * 3).saturating_sub(padding)
    };
    match block {
        ContentBlock::Image(image) => {
            format!("image {}, {} bytes", image.mime_type, decoded(&image.data))
        }
        ContentBlock::Audio(audio) => {
            format!("audio {}, {} bytes", audio.mime_type, decoded(&audio.data))
        }
        ContentBlock::Text(text) => format!("text, {} bytes: {}", text.text.len(), text.text),
        ContentBlock::ResourceLink(link) => format!("resource_link {} ({})", link.uri, link.name),
        ContentBlock::Resource(_) => "resource".to_owned(),
        _ => "a content block".to_owned(),
    }
}

fn language_of(path: &Path) -> Result<Language> {
    if path.as_os_str() == "-" {
        return Ok(Language::TypeScript);
    }
    match path
        .extension()
        .and_then(|e| e.to_str())
        .and_then(Language::from_extension)
    {
        Some(language) => Ok(language),
        None => bail!(
            "cannot tell the language of {}: name it .{}, or pass --language",
            path.display(),
            Language::every_extension().join(", .")
        ),
    }
}

async fn tools(args: ToolsArgs) -> Result<ExitCode> {
    let question = ToolsQuestion {
        query: args.query.clone(),
        limit: args.limit.max(1),
        json: args.json,
        python: args.python,
    };
    let loaded = args.common.load()?;
    if !args.fresh {
        let ask = crate::live::Ask::Tools {
            query: question.query.clone(),
            limit: question.limit,
            json: question.json,
            python: question.python,
        };
        if let Some((source, printed)) =
            crate::live::ask_printed(&args.common.key(), loaded.fingerprint(), ask).await
        {
            if args.json {
                eprintln!("toolweave: {}", source.line());
            } else {
                println_out(&capitalized(&source.line()))?;
            }
            printed.print()?;
            return Ok(ExitCode::SUCCESS);
        }
    }
    let identities = identity_rules(&loaded.settings)?;
    let gateway = start_loaded(&args.common, loaded, ClientSessions::None)?;
    wait_for_servers(&gateway).await;
    let printed = tools_printed(&gateway, &question, &identities, true).await?;
    printed.print()?;
    gateway.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// Writes `line` to stdout.
fn println_out(line: &str) -> Result<()> {
    writeln!(std::io::stdout().lock(), "{line}")?;
    Ok(())
}

/// `text` with its first letter in capitals, as a sentence of its own.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

async fn types(args: TypesArgs) -> Result<ExitCode> {
    let loaded = args.common.load()?;
    if !args.fresh {
        let ask = crate::live::Ask::Types {
            python: args.python,
        };
        if let Some((source, printed)) =
            crate::live::ask_printed(&args.common.key(), loaded.fingerprint(), ask).await
        {
            // A comment, so that the file stays one the editor reads.
            let comment = if args.python { "#" } else { "//" };
            println_out(&format!("{comment} {}", capitalized(&source.line())))?;
            printed.print()?;
            return Ok(ExitCode::SUCCESS);
        }
    }
    let gateway = start_loaded(&args.common, loaded, ClientSessions::None)?;
    wait_for_servers(&gateway).await;
    let declarations = gateway.declarations(flavor(args.python)).await;
    eprint!("{}", unavailable_text(&gateway));
    std::io::stdout()
        .lock()
        .write_all(declarations.as_bytes())?;
    gateway.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// Checks the sandbox and the configured servers; exits non-zero when something needs fixing.
async fn doctor(args: DoctorArgs) -> Result<ExitCode> {
    let startup_timeout = startup_timeout(args.startup_timeout_ms)?;
    let mut out = std::io::stdout().lock();
    let mut problems = doctor_sandbox(&mut out)?;

    {
        match &args.config {
            Some(path) => writeln!(out, "config {}", path.display())?,
            None => writeln!(
                out,
                "config (discovered; `toolweave config` shows from where)"
            )?,
        }
        let settings = match settings_file(args.settings.as_deref()) {
            Ok(settings) => settings,
            Err(error) => {
                writeln!(out, "  FAILED: {error:#}")?;
                return Ok(ExitCode::FAILURE);
            }
        };
        let config = match load_config(args.config.as_deref(), &settings) {
            Ok(config) => config,
            Err(error) => {
                writeln!(out, "  FAILED: {error:#}")?;
                return Ok(ExitCode::FAILURE);
            }
        };
        let live = live_servers(
            args.fresh,
            args.config.as_deref(),
            args.settings.as_deref(),
            &config,
            &settings,
        )
        .await;
        let checks = match &live {
            Some(live) => {
                writeln!(out, "  {}", live.source.line())?;
                let checks = live_checks(&config, live);
                for check in &checks {
                    for line in check.line().lines() {
                        writeln!(out, "  {line}")?;
                    }
                }
                checks
            }
            None => {
                let lines = CheckLines {
                    out: &mut out,
                    indent: "  ",
                    instructions: false,
                };
                check_servers(&config, startup_timeout, Some(lines)).await?
            }
        };
        problems += checks
            .iter()
            .filter(|check| check.error.is_some() || !check.held.is_empty())
            .count();
        for disabled in &config.disabled {
            writeln!(out, "  {disabled}: disabled in the config")?;
        }
        problems += match live {
            Some(live) => unmatched_lines(&mut out, live.rules.as_deref())?,
            None => doctor_rules(&mut out, args.settings.as_deref(), &config, checks)?,
        };
    }
    if problems == 0 {
        writeln!(out, "everything checked is in order")?;
        Ok(ExitCode::SUCCESS)
    } else {
        writeln!(out, "{problems} problem(s) found")?;
        Ok(ExitCode::FAILURE)
    }
}

/// `doctor`'s rules section: each rule of the settings file (and of its identities) that matches
/// no tool of the servers that started; the number of problems found.
fn doctor_rules(
    out: &mut impl Write,
    settings: Option<&Path>,
    config: &Config,
    checks: Vec<ServerCheck>,
) -> Result<usize> {
    let rules = settings_file(settings)
        .and_then(|settings| Ok((policy_of(&settings)?, identity_rules(&settings)?)));
    let (policy, identities) = match rules {
        Ok(rules) => rules,
        Err(error) => {
            writeln!(out, "rules\n  FAILED: {error:#}")?;
            return Ok(1);
        }
    };
    if policy.names_no_tool() && identities.is_empty() {
        return Ok(0);
    }
    let servers: Vec<String> = config
        .servers
        .iter()
        .map(|server| server.name.clone())
        .collect();
    let tools = checks
        .into_iter()
        .filter(|check| check.error.is_none())
        .map(|check| (check.name, check.listed))
        .collect();
    let unmatched = toolweave_core::unmatched_rules_among(&servers, tools, &policy, &identities);
    unmatched_lines(out, Some(&unmatched))
}

/// `doctor`'s rules section, given the rules that match no tool (`None`: the settings name no
/// tool, and there is no section); the number of problems found.
fn unmatched_lines(out: &mut impl Write, unmatched: Option<&[String]>) -> Result<usize> {
    let Some(unmatched) = unmatched else {
        return Ok(0);
    };
    writeln!(out, "rules")?;
    if unmatched.is_empty() {
        writeln!(out, "  every rule matches a tool")?;
    }
    for line in unmatched {
        writeln!(out, "  {line}")?;
    }
    Ok(unmatched.len())
}

/// `doctor`'s sandbox section: what confinement this machine offers, and whether a worker is
/// confined; the number of problems found.
fn doctor_sandbox(out: &mut impl Write) -> Result<usize> {
    writeln!(out, "sandbox")?;
    let support = toolweave_core::confine::probe();
    let landlock = match support.landlock_abi {
        Some(abi) => format!("ABI {abi}"),
        None => "not available".to_owned(),
    };
    writeln!(
        out,
        "  seccomp filters: {}",
        if support.seccomp {
            "available"
        } else {
            "not available"
        }
    )?;
    writeln!(out, "  Landlock: {landlock}")?;
    let mut problems = check_worker_confinement(out)?;
    for warning in support.warnings() {
        problems += 1;
        writeln!(out, "  to fix: {warning}")?;
    }
    Ok(problems)
}

/// Starts a worker that tries to escape its confinement, and says what it could do; the number
/// of problems found (0 or 1).
fn check_worker_confinement(out: &mut impl Write) -> Result<usize> {
    let check = worker_command().map(|command| {
        std::process::Command::new(&command.program)
            .args(&command.args)
            .arg(toolweave_core::CONFINEMENT_CHECK_ARGUMENT)
            .env_clear()
            .output()
    });
    let problems = match check {
        Some(Ok(output)) if output.status.success() => {
            let report: serde_json::Value =
                serde_json::from_slice(&output.stdout).unwrap_or_default();
            let allowed: Vec<&str> = toolweave_core::confine::ESCAPE_ATTEMPTS
                .iter()
                .copied()
                .filter(|attempt| {
                    !report[*attempt]
                        .as_str()
                        .is_some_and(|outcome| outcome.starts_with("denied"))
                })
                .collect();
            if let Some(error) = report.get("error") {
                writeln!(out, "  worker confinement: FAILED: {error}")?;
                1
            } else if allowed.is_empty() {
                writeln!(
                    out,
                    "  worker confinement: working (files, sockets, exec, fork, ptrace denied; \
                     Landlock {})",
                    report["landlock"].as_str().unwrap_or("unknown")
                )?;
                0
            } else {
                writeln!(
                    out,
                    "  worker confinement: INCOMPLETE, a confined worker could still: {}",
                    allowed.join(", ")
                )?;
                1
            }
        }
        Some(Ok(output)) => {
            writeln!(
                out,
                "  worker confinement: the check worker failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )?;
            1
        }
        Some(Err(error)) => {
            writeln!(out, "  worker confinement: cannot start a worker: {error}")?;
            1
        }
        None => {
            writeln!(
                out,
                "  worker confinement: cannot find this program to start workers"
            )?;
            1
        }
    };
    Ok(problems)
}

/// One upstream server after an attempt to start it.
#[derive(Debug, serde::Serialize)]
struct ServerCheck {
    name: String,
    transport: &'static str,
    /// `ready`, `starting` (in a running gateway), `failed` or `stopped`.
    state: String,
    tools: Option<usize>,
    /// From the start of the attempt to its tool list, or to its failure; none when a running
    /// gateway answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    elapsed_ms: Option<u128>,
    error: Option<String>,
    /// A remote server's login: needed, logged in (and until when), or not needed.
    #[serde(skip_serializing_if = "Option::is_none")]
    login: Option<crate::login::LoginState>,
    /// What the server said about using it (`instructions` in its `initialize` answer).
    instructions: Option<String>,
    /// What a stdio server may do: its box, or the user's full authority.
    #[serde(skip_serializing_if = "Option::is_none")]
    access: Option<String>,
    /// Its tools whose definitions differ from their pins: a gateway holds them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    held: Vec<String>,
    /// Its tools, when it is ready.
    #[serde(skip)]
    listed: Vec<toolweave_catalog::ToolDefinition>,
}

impl ServerCheck {
    /// Its line, then its instructions (indented) when it gave some.
    fn text(&self) -> String {
        let mut text = self.line();
        if let Some(instructions) = &self.instructions {
            text.push_str("\n  instructions:");
            // Characters that do not show are written as escapes, as the model reads them.
            for line in toolweave_catalog::visible(instructions).lines() {
                text.push_str("\n    ");
                text.push_str(line);
            }
        }
        text
    }

    fn line(&self) -> String {
        let line = match (&self.error, self.tools) {
            (Some(error), _) => format!(
                "{} ({}): FAILED{}: {error}",
                self.name,
                self.transport,
                self.elapsed_ms
                    .map(|ms| format!(" after {ms} ms"))
                    .unwrap_or_default()
            ),
            (None, _) if self.state != "ready" => {
                let state = match self.state.as_str() {
                    "starting" => "still starting",
                    other => other,
                };
                format!("{} ({}): {state}", self.name, self.transport)
            }
            (None, tools) => {
                format!(
                    "{} ({}): ready, {} tool{}{}{}",
                    self.name,
                    self.transport,
                    tools.unwrap_or(0),
                    if tools == Some(1) { "" } else { "s" },
                    self.elapsed_ms
                        .map(|ms| format!(" ({ms} ms)"))
                        .unwrap_or_default(),
                    self.login
                        .as_ref()
                        .map(|login| format!("; {}", login.line()))
                        .unwrap_or_default()
                ) + &if self.held.is_empty() {
                    String::new()
                } else {
                    format!("; {}", crate::pins::held_note(self.held.len()))
                }
            }
        };
        match &self.access {
            Some(access) => format!("{line}\n  may: {access}"),
            None => line,
        }
    }
}

/// Where [`check_servers`] writes each server's line as soon as it is ready or has failed.
struct CheckLines<'a> {
    out: &'a mut dyn Write,
    /// Written before every line.
    indent: &'a str,
    /// Whether a server's instructions follow its line.
    instructions: bool,
}

/// Starts every server of `config`, each timed on its own, and stops them again; the checks come
/// back in config order. With `lines`, each server's line is written as soon as it is ready or
/// has failed, and the servers still starting after [`DISCOVERY_WAIT`] are named there, so one
/// server that never answers holds back no other's line.
async fn check_servers(
    config: &Config,
    startup_timeout: Duration,
    mut lines: Option<CheckLines<'_>>,
) -> Result<Vec<ServerCheck>> {
    use futures::StreamExt;
    let upstream = toolweave_upstream::UpstreamManager::start(
        config,
        toolweave_upstream::Options {
            startup_timeout,
            call_timeout: Limits::default().tool_call_timeout,
            client_sessions: ClientSessions::None,
        },
    );
    let started = std::time::Instant::now();
    let pins = crate::machine::pins_folder().map(toolweave_config::PinsFolder::new);
    let pins = &pins;
    let mut pending: futures::stream::FuturesUnordered<_> = config
        .servers
        .iter()
        .enumerate()
        .map(|(index, server)| {
            let upstream = &upstream;
            async move {
                (
                    index,
                    check_server(upstream, server, started, pins.as_ref()).await,
                )
            }
        })
        .collect();
    let mut checks: Vec<Option<ServerCheck>> = config.servers.iter().map(|_| None).collect();
    let patience = tokio::time::sleep(DISCOVERY_WAIT);
    tokio::pin!(patience);
    let mut waited = false;
    loop {
        tokio::select! {
            next = pending.next() => {
                let Some((index, check)) = next else { break };
                if let Some(lines) = lines.as_mut() {
                    let text = if lines.instructions { check.text() } else { check.line() };
                    for line in text.lines() {
                        writeln!(lines.out, "{}{line}", lines.indent)?;
                    }
                    lines.out.flush()?;
                }
                if let Some(slot) = checks.get_mut(index) {
                    *slot = Some(check);
                }
            }
            () = &mut patience, if !waited => {
                waited = true;
                let starting = starting_servers(&upstream);
                if let Some(lines) = lines.as_mut()
                    && !starting.is_empty()
                {
                    writeln!(
                        lines.out,
                        "{}still starting after {} s: {}; waiting up to {} ms in all (--startup-timeout-ms sets it)",
                        lines.indent,
                        DISCOVERY_WAIT.as_secs(),
                        quoted_list(&starting),
                        startup_timeout.as_millis()
                    )?;
                    lines.out.flush()?;
                }
            }
        }
    }
    drop(pending);
    upstream.shutdown().await;
    Ok(checks.into_iter().flatten().collect())
}

/// Waits for `server` to be ready or fail (`started` is when every server was started), and
/// what there is to say of it.
async fn check_server(
    upstream: &toolweave_upstream::UpstreamManager,
    server: &toolweave_config::ServerConfig,
    started: std::time::Instant,
    pins: Option<&toolweave_config::PinsFolder>,
) -> ServerCheck {
    let outcome = upstream.tools(&server.name).await;
    let elapsed_ms = started.elapsed().as_millis();
    let needs_login = matches!(outcome, Err(toolweave_upstream::Error::LoginNeeded { .. }));
    let login = crate::login::login_state(server, outcome.is_ok(), needs_login);
    let held = match (&outcome, pins) {
        (Ok(tools), Some(pins)) => {
            // Read and compared off the runtime's threads: the other servers' checks go on.
            let (pins, name, tools) = (pins.clone(), server.name.clone(), tools.clone());
            let compared = tokio::task::spawn_blocking(move || {
                pins.load(&name)
                    .map(|pins| toolweave_core::held_among(&pins, &tools))
                    .map_err(|error| error.to_string())
            })
            .await
            .unwrap_or_else(|error| Err(format!("reading the pins failed: {error}")));
            compared.unwrap_or_else(|error| {
                tracing::warn!("{error}");
                Vec::new()
            })
        }
        _ => Vec::new(),
    };
    let (state, tools, error, listed) = match outcome {
        Ok(tools) => ("ready", Some(tools.len()), None, tools),
        Err(error) => ("failed", None, Some(error.to_string()), Vec::new()),
    };
    let state = state.to_owned();
    let instructions = upstream
        .status()
        .into_iter()
        .find(|status| status.name == server.name)
        .and_then(|status| status.instructions);
    ServerCheck {
        name: server.name.clone(),
        transport: server.transport.kind(),
        state,
        tools,
        elapsed_ms: Some(elapsed_ms),
        error,
        login,
        instructions,
        access: server_access(server),
        held,
        listed,
    }
}

/// What a stdio server may do, for `doctor`: what its box grants, or everything the user may.
fn server_access(server: &toolweave_config::ServerConfig) -> Option<String> {
    match &server.transport {
        toolweave_config::Transport::Stdio {
            sandbox: Some(sandbox),
            ..
        } => Some(format!(
            "boxed ({}): {}",
            sandbox.written_at(),
            sandbox.describe()
        )),
        toolweave_config::Transport::Stdio { .. } => Some(
            "unboxed: everything you may (your files, the network, toolweave's environment); \
             add \"sandbox\" to its entry, or to toolweave's settings file for every server, to box it"
                .to_owned(),
        ),
        _ => None,
    }
}

/// What the running gateway started with `config_path` and `settings_path` (when one runs, and
/// `fresh` does not say to start the servers) holds of each server of `config`.
async fn live_servers(
    fresh: bool,
    config_path: Option<&Path>,
    settings_path: Option<&Path>,
    config: &Config,
    settings: &toolweave_config::Settings,
) -> Option<crate::live::LiveServers> {
    if fresh {
        return None;
    }
    let key = crate::live::Key {
        config: config_path,
        settings: settings_path,
    };
    let fingerprint =
        crate::live::fingerprint(config, settings, Limits::default().max_result_bytes);
    crate::live::ask_servers(&key, fingerprint).await
}

/// The checks of `config`'s servers as a running gateway holds them, in config order.
fn live_checks(config: &Config, live: &crate::live::LiveServers) -> Vec<ServerCheck> {
    config
        .servers
        .iter()
        .filter_map(|server| {
            let held = live.servers.iter().find(|held| held.name == server.name)?;
            let ready = held.state == "ready";
            Some(ServerCheck {
                name: server.name.clone(),
                transport: server.transport.kind(),
                state: held.state.clone(),
                tools: held.tools,
                elapsed_ms: None,
                error: held.error.clone(),
                login: crate::login::login_state(server, ready, held.needs_login),
                instructions: held.instructions.clone(),
                access: server_access(server),
                held: held.held.clone(),
                listed: Vec::new(),
            })
        })
        .collect()
}

async fn servers(args: ServersArgs) -> Result<ExitCode> {
    let startup_timeout = startup_timeout(args.startup_timeout_ms)?;
    let settings = settings_file(args.settings.as_deref())?;
    let config = load_config(args.config.as_deref(), &settings)?;
    let live = live_servers(
        args.fresh,
        args.config.as_deref(),
        args.settings.as_deref(),
        &config,
        &settings,
    )
    .await;
    let mut out = std::io::stdout().lock();
    let checks = match &live {
        Some(live) => {
            let checks = live_checks(&config, live);
            if !args.json {
                writeln!(out, "{}", capitalized(&live.source.line()))?;
                for check in &checks {
                    writeln!(out, "{}", check.text())?;
                }
            }
            checks
        }
        None => {
            let lines = if args.json {
                None
            } else {
                Some(CheckLines {
                    out: &mut out,
                    indent: "",
                    instructions: true,
                })
            };
            check_servers(&config, startup_timeout, lines).await?
        }
    };
    let failed = checks.iter().filter(|check| check.error.is_some()).count();
    if args.json {
        let mut report = serde_json::json!({
            "servers": checks,
            "disabled": config.disabled,
        });
        if let Some(live) = &live {
            eprintln!("toolweave: {}", live.source.line());
            report["gateway"] = serde_json::json!({
                "pid": live.source.pid,
                "since": live.source.since,
            });
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        for disabled in &config.disabled {
            writeln!(out, "{disabled}: disabled in the config")?;
        }
        if checks.is_empty() {
            match &args.config {
                Some(path) => writeln!(out, "no servers configured in {}", path.display())?,
                None => writeln!(out, "no servers configured")?,
            }
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `--startup-timeout-ms`, checked.
fn startup_timeout(millis: u64) -> Result<Duration> {
    if millis == 0 {
        bail!("--startup-timeout-ms must be greater than 0");
    }
    Ok(Duration::from_millis(millis))
}

/// Waits for every server to be ready or failed (each bounded by the startup timeout), as a
/// command run once to list tools needs them all; servers still starting after
/// [`DISCOVERY_WAIT`] are named on stderr, with the flag that bounds the wait.
async fn wait_for_servers(gateway: &Gateway) {
    let settled = gateway.upstream().all_tools();
    tokio::pin!(settled);
    if tokio::time::timeout(DISCOVERY_WAIT, &mut settled)
        .await
        .is_ok()
    {
        return;
    }
    let starting = starting_servers(gateway.upstream());
    if !starting.is_empty() {
        eprintln!(
            "toolweave: waiting for {} to start (up to {} ms in all; --startup-timeout-ms sets it)",
            quoted_list(&starting),
            gateway.limits().startup_timeout.as_millis()
        );
    }
    settled.await;
}

/// The servers still starting, in config order.
fn starting_servers(upstream: &toolweave_upstream::UpstreamManager) -> Vec<String> {
    upstream
        .status()
        .into_iter()
        .filter(|status| matches!(status.state, toolweave_upstream::ServerState::Starting))
        .map(|status| status.name)
        .collect()
}

/// `"a"`, `"a" and "b"`, `"a", "b" and "c"`: server names for a sentence.
fn quoted_list(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| format!("\"{name}\"")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}
