//! The MCP face of toolweave: three tools, whatever the number of upstream tools (or one, whose
//! description declares them, for a small catalog), and chosen upstream tools listed directly.
//!
//! [`ToolweaveServer`] implements rmcp's `ServerHandler` once; the binary picks the transport.
//! Failures of guest code, limits, unknown tools and arguments a tool cannot use come back as
//! `isError` results the model can read; only requests that are malformed as requests are
//! JSON-RPC errors. Upstream servers' requests to the client reach it through `forward.rs`.

#![cfg_attr(
    test,
    allow(
        clippy::too_many_lines,
        reason = "a test reads top to bottom as one scenario"
    )
)]
// MCP logging (`logging/setLevel`, `notifications/message`) is deprecated by SEP-2577 for the
// newest protocol version; clients speaking 2025-06-18 and 2025-11-25 use it, so it is served.
#![allow(deprecated)]

mod approve;
mod forward;
mod handles;
mod handover;
pub mod health;
pub mod http;
mod http_error;
mod incoming;
mod listing;
pub mod metrics;
pub mod page;
mod rounds;
mod sealed;
pub mod sessions;
pub mod shared;
pub mod stdio;
mod tasks;
pub mod telemetry;
mod tools;

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    ContentBlock, CustomRequest, CustomResult, DiscoverResult, GetTaskParams, GetTaskResult,
    Implementation, InitializeRequestParams, InitializeResult, ListToolsResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, ProtocolVersion, ServerCapabilities, ServerConfig, SetLevelRequestParams,
    SubscriptionFilter, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::task::TaskTracker;

use toolweave_core::{
    ClientConnection, DirectCall, ExecuteOptions, Flavor, Gateway, Language, Listener, Notice,
    SessionHandleError, SessionState, ToolGlobs,
};

use crate::approve::{AskTheClient, SessionApprovals};
use crate::forward::{ClientPeer, SessionRequests};
use crate::listing::{Joined, Listing};
use crate::rounds::{Mailbox, PageWaits, Rounds};
pub use listing::{MAX_DECLARED_BYTES, ToolsOptions};
use tools::MAX_SEARCH_LIMIT;
pub use tools::{DESCRIBE_TOOLS, EXECUTE_CODE, SEARCH_TOOLS, tool_definitions};

/// The MCP server handler. Cheap to clone: every session shares one [`Gateway`].
#[derive(Clone)]
pub struct ToolweaveServer {
    gateway: Arc<Gateway>,
    /// What `tools/list` shows, shared by every session.
    listing: Arc<Listing>,
    /// This session's place among those told when the list changes, once it has initialized.
    joined: Arc<Mutex<Option<Joined>>>,
    /// Executions (and calls of tools listed directly) under way, in every session: serving
    /// waits for them before it ends.
    executions: TaskTracker,
    /// The least severe log level this session's client asked for (`logging/setLevel`).
    log_level: Arc<Mutex<LoggingLevel>>,
    /// This session's number, for the audit log (an HTTP session is named by its id instead).
    session: u64,
    /// Executions a session may start per minute, when limited.
    rate: Option<governor::Quota>,
    /// This session's share of that rate.
    limiter: Option<Arc<governor::DefaultDirectRateLimiter>>,
    /// What this session keeps for upstream servers' requests (its roots).
    requests: Arc<SessionRequests>,
    /// This session's place among those upstream servers' requests may reach, once it has
    /// initialized; it leaves when the session's handler is dropped.
    connection: Arc<Mutex<Option<ClientConnection>>>,
    /// One search or describe of this session at a time: a client that sends a thousand at once
    /// waits for its own, and other sessions' do not queue behind them.
    discovery_turn: Arc<tokio::sync::Semaphore>,
    /// Where executions and refusals are counted, when metrics are on.
    metrics: Option<Arc<metrics::Metrics>>,
    /// What this session's person approved for the rest of the session.
    approvals: Arc<SessionApprovals>,
    /// The approval page and the calls waiting at it, shared by every session.
    pages: Arc<page::ApprovalPages>,
    /// What this session's executions keep across runs (the store, result handles); dropped
    /// with the session's handler.
    state: Arc<SessionState>,
    /// The identity this session was opened as (over HTTP with identities set; `None` for the
    /// gateway's own token or none), once its first request came: later requests must be made
    /// as the same.
    identity: Arc<std::sync::OnceLock<Option<String>>>,
    /// Executions paused for the answers of clients that speak MCP 2026-07-28, shared by every
    /// session.
    rounds: Arc<Rounds>,
    /// Sessions named by handles, for requests over HTTP without an MCP session, shared by
    /// every handler.
    handles: Arc<handles::SessionHandles>,
    /// Whether identities are set (over HTTP): each token has rules of its own, so what
    /// `tools/list` answers is cached per token (`cacheScope` private).
    per_identity: bool,
    /// With `--state`: the backend the copies share, and how a retry is handed over to the copy
    /// that holds its paused execution.
    shared: Option<Arc<Shared>>,
    /// Calls run as tasks (the MCP tasks extension), shared by every handler.
    tasks: Arc<tasks::Tasks>,
}

/// What a copy given `--state` needs to hand retries over.
struct Shared {
    state: Arc<shared::SharedState>,
    /// This copy's MCP address, as the others reach it.
    own: String,
    client: reqwest::Client,
}

/// Where an execution keeps what outlives it and what its person approves for the rest of the
/// session: its protocol session's (stdio's process, an HTTP session), or those of the session a
/// handle names (HTTP without an MCP session).
struct Scope {
    state: Arc<SessionState>,
    approvals: Arc<SessionApprovals>,
    /// How the audit log names the session.
    name: String,
    /// The session handles name, when the request belongs to no protocol session: the answer
    /// carries a fresh handle of it.
    named: Option<Arc<handles::HandleSession>>,
}

/// How long a client may keep `server/discover`'s answer: it changes only when toolweave is
/// started again with other settings. The same holds for a tool list that does not follow the
/// catalog.
const DISCOVER_TTL_MS: u64 = 60 * 60 * 1000;

/// How long a client may keep a tool list that follows the catalog: it changes when an upstream
/// server comes or goes, changes its tools, or has tools held by pins. Each change is told at once
/// on `subscriptions/listen` streams (and to 2025-11-25 sessions); a client without one reads
/// the list again within a minute.
const FOLLOWING_LIST_TTL_MS: u64 = 60 * 1000;

/// The `_meta` key of a 2026-07-28 request's log level.
const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";

/// A request whose `_meta` names a log level MCP does not have is refused (`-32602`), naming the
/// levels it has, as the logging utility asks. rmcp 3.11 reads such a level as none at all, and
/// checks nothing: this is that check.
fn check_log_level(context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
    match context.meta.get(LOG_LEVEL_KEY) {
        Some(given) if context.meta.log_level().is_none() => Err(ErrorData::invalid_params(
            format!(
                "_meta {LOG_LEVEL_KEY} is {}, which is not an MCP log level: give one of debug, \
                 info, notice, warning, error, critical, alert or emergency, or leave it out to \
                 be sent no log messages",
                toolweave_core::cut(given.to_string(), MAX_ECHOED_NAME)
            ),
            None,
        )),
        _ => Ok(()),
    }
}

/// Whether the request is made in MCP 2026-07-28 or later: its client declares what it supports
/// on each request, sends no `initialize`, and takes no requests from the server.
fn modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

/// Whether the request is made in MCP 2026-07-28 or later and declares the tasks extension: a
/// call of `execute_code` or of a tool listed directly is then made a task (`tasks.rs`).
fn wants_task(context: &RequestContext<RoleServer>) -> bool {
    modern(context)
        && context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks())
}

/// A call of a tool listed directly: `server`'s `tool`, with `arguments`, by `caller`.
struct Direct {
    server: String,
    tool: String,
    arguments: Map<String, Value>,
    caller: Option<Arc<http::IdentityToken>>,
}

/// `context` for work run across rounds (`rounds.rs`): cancelled by `cancel`, its questions going
/// to `mailbox` when its client speaks MCP 2026-07-28 (`modern`; else they are requests to the
/// client), and its calls waiting at the approval page told to `waits` when given.
fn in_rounds(
    mut context: RequestContext<RoleServer>,
    mailbox: Mailbox,
    waits: Option<PageWaits>,
    cancel: tokio_util::sync::CancellationToken,
) -> RequestContext<RoleServer> {
    context.ct = cancel;
    if modern(&context) {
        context.extensions.insert(mailbox);
    }
    if let Some(waits) = waits {
        context.extensions.insert(waits);
    }
    context
}

/// Numbers handed to sessions.
static SESSIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_session() -> u64 {
    SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl ToolweaveServer {
    /// A handler over a started gateway.
    pub fn new(gateway: Arc<Gateway>) -> Self {
        let namespaces: Vec<String> = gateway
            .namespaces()
            .into_iter()
            .map(|(guest, _)| guest)
            .collect();
        // One key seals paused executions' states and session handles alike.
        let seals = sealed::Seals::local();
        Self {
            listing: Arc::new(Listing::new(ToolsOptions::default(), &namespaces)),
            joined: Arc::default(),
            executions: TaskTracker::new(),
            log_level: Arc::new(Mutex::new(LoggingLevel::Info)),
            session: next_session(),
            rate: None,
            limiter: None,
            requests: Arc::default(),
            connection: Arc::default(),
            discovery_turn: Arc::new(tokio::sync::Semaphore::new(1)),
            metrics: None,
            approvals: Arc::default(),
            pages: Arc::new(page::ApprovalPages::new(page::ApprovalOptions::default())),
            state: gateway.session_state(),
            identity: Arc::default(),
            rounds: Arc::new(Rounds::new(seals.clone(), None)),
            handles: Arc::new(handles::SessionHandles::in_memory(seals)),
            per_identity: false,
            shared: None,
            tasks: Arc::default(),
            gateway,
        }
    }

    /// Keeps the store, result handles, session handles and where paused executions are held in
    /// `state` (`--state`), shared with the other copies given the same; `own` is this copy's
    /// MCP address (`http://HOST:PORT/mcp`) as they reach it. Handles and states are sealed with
    /// the key kept there, read now (or, while the backend does not answer, as soon as it does).
    pub async fn with_state(
        mut self,
        state: Arc<shared::SharedState>,
        own: String,
    ) -> Result<Self, String> {
        let client = handover::client().map_err(|error| {
            format!("--state: no HTTP client for handing retries over: {error}")
        })?;
        let seals = sealed::Seals::shared(state.clone()).await;
        self.rounds = Arc::new(Rounds::new(
            seals.clone(),
            Some((state.clone(), own.clone())),
        ));
        self.handles = Arc::new(handles::SessionHandles::shared(seals, state.clone()));
        self.shared = Some(Arc::new(Shared { state, own, client }));
        Ok(self)
    }

    /// Serves a client whose tokens name identities (`per_identity`), each with rules of its own.
    pub fn with_identities(mut self, per_identity: bool) -> Self {
        self.per_identity = per_identity;
        self
    }

    /// Asks for approval as `options` say (form elicitation or the approval page, and how long
    /// a call waits at the page).
    pub fn with_approval(mut self, options: page::ApprovalOptions) -> Self {
        self.pages = Arc::new(page::ApprovalPages::new(options));
        self
    }

    /// Lists the tools `options` says: the shape's own, and upstream tools listed directly.
    pub fn with_tools(mut self, options: ToolsOptions) -> Self {
        let namespaces: Vec<String> = self
            .gateway
            .namespaces()
            .into_iter()
            .map(|(guest, _)| guest)
            .collect();
        self.listing = Arc::new(Listing::new(options, &namespaces));
        listing::follow(&self.listing, &self.gateway);
        self
    }

    /// Counts executions, tool calls and refusals in `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<metrics::Metrics>) -> Self {
        self.gateway.observe(metrics.clone());
        self.metrics = Some(metrics);
        self
    }

    /// Limits every session to `per_minute` executions a minute (a burst of that many, then
    /// refilled evenly).
    pub fn with_rate_limit(mut self, per_minute: std::num::NonZeroU32) -> Self {
        let quota = governor::Quota::per_minute(per_minute);
        self.rate = Some(quota);
        self.limiter = Some(Arc::new(governor::RateLimiter::direct(quota)));
        self
    }

    /// A handle for one more client session: the same gateway and executions, with state of
    /// its own (the log level it asks for).
    pub fn for_session(&self) -> Self {
        Self {
            log_level: Arc::new(Mutex::new(LoggingLevel::Info)),
            session: next_session(),
            limiter: self
                .rate
                .map(|quota| Arc::new(governor::RateLimiter::direct(quota))),
            requests: Arc::default(),
            connection: Arc::default(),
            joined: Arc::default(),
            discovery_turn: Arc::new(tokio::sync::Semaphore::new(1)),
            approvals: Arc::default(),
            state: self.gateway.session_state(),
            identity: Arc::default(),
            ..self.clone()
        }
    }

    /// This session's client as upstream servers' requests reach it; in the name of request
    /// `originating` when they are made during it.
    fn client_peer(
        &self,
        peer: &Peer<RoleServer>,
        originating: Option<rmcp::model::RequestId>,
    ) -> ClientPeer {
        ClientPeer::new(
            self.session,
            peer.clone(),
            originating,
            self.requests.clone(),
        )
    }

    /// The client as the request in `context` reaches it: with the capabilities the request
    /// declared, and, for a client speaking MCP 2026-07-28, the multi round-trip request its
    /// questions go to.
    fn request_client(&self, context: &RequestContext<RoleServer>) -> ClientPeer {
        self.client_peer(&context.peer, Some(context.id.clone()))
            .for_request(
                context.meta.client_capabilities(),
                modern(context),
                context.extensions.get::<Mailbox>().cloned(),
            )
    }

    /// A client speaking MCP 2026-07-28 sends no `initialize`: its first request makes it known
    /// to upstream connections (so that, over stdio, upstream servers start at once), as one
    /// that declares what it supports on each request.
    fn connect_per_request(&self, context: &RequestContext<RoleServer>) {
        if !modern(context) {
            return;
        }
        let mut connection = self
            .connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if connection.is_some() {
            return;
        }
        let client = Arc::new(
            self.client_peer(&context.peer, None)
                .for_request(None, true, None),
        );
        *connection = Some(self.gateway.upstream().client_connected(client, None));
    }

    /// A handle for one request that stands alone (stateless HTTP): state of its own like a
    /// session's, but the rate limit of this handle, so `--rate-limit` bounds the whole copy.
    pub fn for_request(&self) -> Self {
        Self {
            log_level: Arc::new(Mutex::new(LoggingLevel::Info)),
            session: next_session(),
            discovery_turn: Arc::new(tokio::sync::Semaphore::new(1)),
            requests: Arc::default(),
            connection: Arc::default(),
            joined: Arc::default(),
            approvals: Arc::default(),
            state: self.gateway.session_state(),
            identity: Arc::default(),
            ..self.clone()
        }
    }

    /// How many executions (and calls of tools listed directly) run now, in every session.
    pub fn executions_running(&self) -> usize {
        self.executions.len()
    }

    /// How the audit log names this request's session: the HTTP session id when there is one,
    /// else this handler's number.
    fn session_name(&self, context: &RequestContext<RoleServer>) -> String {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|id| id.to_str().ok())
            .map_or_else(|| self.session.to_string(), str::to_owned)
    }

    /// Whether the request came over HTTP without an MCP session (a client speaking MCP
    /// 2026-07-28, or `--stateless`).
    fn sessionless(context: &RequestContext<RoleServer>) -> bool {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .is_some_and(|parts| !parts.headers.contains_key("mcp-session-id"))
    }

    /// Where this request's execution keeps what outlives it: its protocol session, or, for an
    /// HTTP request that belongs to none, the session its `"session"` handle names (a new one
    /// without). A handle given where there is a protocol session is not used, and `warnings`
    /// says so.
    async fn scope(
        &self,
        arguments: &Map<String, Value>,
        context: &RequestContext<RoleServer>,
        caller: &str,
        warnings: &mut Vec<String>,
    ) -> Result<Scope, ErrorData> {
        let handle = match arguments.get("session") {
            None | Some(Value::Null) => None,
            Some(Value::String(handle)) => Some(handle.as_str()),
            Some(_) => return Err(invalid(SessionHandleError::NotAString.to_string())),
        };
        if !Self::sessionless(context) {
            if handle.is_some() {
                warnings.push(
                    "\"session\" was not used: this request belongs to an MCP session (stdio, or \
                     HTTP with an Mcp-Session-Id), whose store, result handles and approvals \
                     the execution has."
                        .to_owned(),
                );
            }
            return Ok(Scope {
                state: self.state.clone(),
                approvals: self.approvals.clone(),
                name: self.session_name(context),
                named: None,
            });
        }
        let named = self
            .handles
            .open(handle, caller, self.gateway.limits())
            .await
            .map_err(|error| invalid(error.to_string()))?;
        Ok(Scope {
            state: named.state.clone(),
            approvals: named.approvals.clone(),
            name: named.name(),
            named: Some(named),
        })
    }

    /// The identity this request was made as (its token's, over HTTP), checked against the one
    /// the session was opened as: `Err` says why a request made as another cannot use it.
    fn caller(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<Option<Arc<http::IdentityToken>>, String> {
        let caller = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Arc<http::IdentityToken>>())
            .cloned();
        let name = caller
            .as_ref()
            .map(|caller| caller.identity().name().to_owned());
        let opened_as = self.identity.get_or_init(|| name.clone());
        if *opened_as == name {
            return Ok(caller);
        }
        let who = |name: &Option<String>| {
            name.as_ref().map_or_else(
                || "the token of --auth-token-env".to_owned(),
                |name| format!("identity \"{name}\"'s token"),
            )
        };
        Err(format!(
            "this session was opened with {}, and this request carries {}: a session is used \
             with the token it was opened with; open a new session with this token",
            who(opened_as),
            who(&name)
        ))
    }

    /// The name of the identity that made the request in `context` (empty for none), or the
    /// error when it is not the session's.
    fn caller_name(&self, context: &RequestContext<RoleServer>) -> Result<String, ErrorData> {
        let caller = self
            .caller(context)
            .map_err(|message| ErrorData::invalid_request(message, None))?;
        Ok(caller
            .map(|caller| caller.identity().name().to_owned())
            .unwrap_or_default())
    }

    /// Runs `work` (an execution, or a call of a tool listed directly) for `caller` calling
    /// `tool` as a task: the answer is the task's handle, at once, or why no task was made.
    async fn start_task<F>(
        &self,
        caller: &str,
        tool: &str,
        work: impl FnOnce(
            Mailbox,
            PageWaits,
            tokio_util::sync::CancellationToken,
            tasks::TaskProgress,
        ) -> F
        + Send
        + 'static,
    ) -> CallToolResponse
    where
        F: Future<Output = CallToolResult> + Send + 'static,
    {
        let entry = match self.tasks.create(caller) {
            Ok(entry) => entry,
            Err(why) => {
                return CallToolResponse::Complete(CallToolResult::error(vec![
                    ContentBlock::text(why),
                ]));
            }
        };
        // With `--state`, any copy finds this one by the task's id before the handle is out.
        if let Some(shared) = &self.shared
            && let Err(why) = shared
                .state
                .hold(tasks::id(&entry), &shared.own, tasks::TASK_TTL)
                .await
        {
            tracing::warn!(task = tasks::id(&entry), %why, "other copies will not find this task");
        }
        let answer = tasks::created(&entry);
        let rounds = self.rounds.clone();
        let (caller, tool) = (caller.to_owned(), tool.to_owned());
        let progress = tasks::progress(&entry);
        let tell: rounds::WaitTeller = Box::new(tasks::telling(&entry));
        self.executions.spawn(async move {
            let ct = tasks::cancelled(&entry);
            let work = move |mailbox, waits, cancel| work(mailbox, waits, cancel, progress);
            let first = rounds
                .start_telling(&caller, &tool, work, &ct, Some(tell))
                .await;
            tasks::drive(entry, rounds, caller, tool, first).await;
        });
        answer
    }

    /// The least severe log level sent during the request in `context`: a 2026-07-28 request's
    /// own (`io.modelcontextprotocol/logLevel` in `_meta`; without it, no log message at all),
    /// else the request's or, failing that, the session's (`logging/setLevel`).
    fn request_log_level(&self, context: &RequestContext<RoleServer>) -> Option<LoggingLevel> {
        match context.meta.log_level() {
            Some(level) => Some(level),
            None if modern(context) => None,
            None => Some(self.log_level()),
        }
    }

    /// The log level this session's client asked for.
    pub fn log_level(&self) -> LoggingLevel {
        *self
            .log_level
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits up to `grace` for the executions under way to finish; whether they all did.
    pub async fn drain(&self, grace: std::time::Duration) -> bool {
        self.executions.close();
        tokio::time::timeout(grace, self.executions.wait())
            .await
            .is_ok()
    }

    /// The gateway behind this handler.
    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gateway
    }

    async fn search(&self, arguments: &Map<String, Value>) -> Result<CallToolResult, ErrorData> {
        let query = match arguments.get("query") {
            Some(Value::String(query)) => query.clone(),
            None | Some(Value::Null) => String::new(),
            Some(_) => return Err(invalid("\"query\" must be a string")),
        };
        let limit = match arguments.get("limit") {
            None | Some(Value::Null) => toolweave_catalog::DEFAULT_SEARCH_LIMIT,
            Some(Value::Number(n)) => match n.as_u64() {
                Some(n) if n >= 1 => (n as usize).min(MAX_SEARCH_LIMIT),
                _ => return Err(invalid("\"limit\" must be a positive integer")),
            },
            Some(_) => return Err(invalid("\"limit\" must be a positive integer")),
        };
        let flavor = flavor(arguments)?;
        let answer = {
            let _turn = self.discovery_turn.acquire().await;
            self.gateway.search(query.clone(), limit, flavor).await
        }
        .map_err(|error| invalid(error.to_string()))?;
        let unavailable = self.gateway.unavailable();
        let text = toolweave_core::search_text(&query, &answer, &unavailable);
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        // The hits without their signatures, which the text has: what a program needs to
        // pick one and call describe_tools, at a fraction of the text's tokens.
        let hits: Vec<Value> = answer
            .results
            .iter()
            .map(|hit| {
                let mut found = json!({ "name": hit.name, "description": hit.description });
                if hit.deprecated {
                    found["deprecated"] = json!(true);
                }
                if hit.weak {
                    found["weak"] = json!(true);
                }
                found
            })
            .collect();
        let mut structured = json!({ "results": hits });
        if answer.omitted > 0 {
            structured["omitted"] = json!(answer.omitted);
        }
        if !unavailable.is_empty() {
            structured["unavailable"] = json!(unavailable);
        }
        if !answer.held.is_empty() {
            structured["held"] = json!(answer.held);
        }
        result.structured_content = Some(structured);
        Ok(result)
    }

    async fn describe(&self, arguments: &Map<String, Value>) -> Result<CallToolResult, ErrorData> {
        let names: Vec<String> = match arguments.get("names") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Value::String(name) => Ok(name.clone()),
                    _ => Err(invalid("\"names\" must be an array of strings")),
                })
                .collect::<Result<_, _>>()?,
            Some(Value::String(name)) => vec![name.clone()],
            _ => {
                return Err(invalid(
                    "\"names\" is required: an array of tool names such as [\"server.tool\"]",
                ));
            }
        };
        let flavor = flavor(arguments)?;
        let schemas = match arguments.get("schemas") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(schemas)) => *schemas,
            Some(_) => return Err(invalid("\"schemas\" must be true or false")),
        };
        let answer = {
            let _turn = self.discovery_turn.acquire().await;
            self.gateway.describe(names, flavor, schemas).await
        }
        .map_err(|error| invalid(error.to_string()))?;
        let text = toolweave_core::describe_text(&answer);
        let failed = answer.tools.is_empty();
        let mut result = if failed {
            CallToolResult::error(vec![ContentBlock::text(text)])
        } else {
            CallToolResult::success(vec![ContentBlock::text(text)])
        };
        result.structured_content = Some(described_structured(&answer));
        Ok(result)
    }

    /// Runs `code`; `warnings` (about the arguments) come first among the answer's warnings.
    async fn execute(
        &self,
        arguments: &Map<String, Value>,
        warnings: Vec<String>,
        context: &RequestContext<RoleServer>,
        caller: Option<Arc<http::IdentityToken>>,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(Value::String(code)) = arguments.get("code") else {
            return Err(invalid(
                "\"code\" is required: the program to run, as a string",
            ));
        };
        let language = match arguments.get("language") {
            None | Some(Value::Null) => Language::TypeScript,
            Some(Value::String(name)) => Language::from_name(name).ok_or_else(|| {
                invalid(format!(
                    "unknown \"language\" {name:?}: use \"typescript\", \"javascript\" or \"python\""
                ))
            })?,
            Some(_) => return Err(invalid("\"language\" must be a string")),
        };
        let allowed_tools = allowed_tools(arguments)?;
        let timeout = requested_timeout(arguments)?;
        let caller_name = caller
            .as_ref()
            .map(|caller| caller.identity().name().to_owned())
            .unwrap_or_default();
        let mut warnings = warnings;
        let scope = self
            .scope(arguments, context, &caller_name, &mut warnings)
            .await?;
        if let Some(refusal) = self.rate_limited(caller.as_deref()) {
            return Ok(refusal);
        }
        let span = telemetry::execution_span(language, &context.meta);
        let mut report = tracing::Instrument::instrument(
            self.with_notices(context, |listener| {
                self.gateway.execute(
                    code.clone(),
                    language,
                    ExecuteOptions {
                        listener: Some(listener),
                        session: scope.name.clone(),
                        approver: Some(Arc::new(
                            AskTheClient::new(
                                self.request_client(context),
                                Some(code_sha256(code)),
                                scope.approvals.clone(),
                                self.pages.clone(),
                                self.request_log_level(context),
                            )
                            .telling(context.extensions.get::<PageWaits>().cloned()),
                        )),
                        cancel: context.ct.clone(),
                        state: Some(scope.state.clone()),
                        allowed_tools,
                        timeout,
                        identity: caller.map(|caller| caller.identity().clone()),
                    },
                )
            }),
            span.clone(),
        )
        .await;
        report.warnings.splice(0..0, warnings);
        let outcome = report
            .result
            .as_ref()
            .map_or_else(|error| error.kind(), |_| "ok");
        telemetry::execution_ended(&span, outcome);
        if let Some(metrics) = &self.metrics {
            let duration = std::time::Duration::from_secs_f64(report.stats.duration_ms / 1000.0);
            metrics.execution(language, outcome, duration);
        }
        Ok(self.answer_in(&scope, report).await)
    }

    /// The answer for an execution's `report`, run in `scope`: with a fresh handle of its
    /// session when handles name it.
    async fn answer_in(
        &self,
        scope: &Scope,
        mut report: toolweave_core::ExecutionReport,
    ) -> CallToolResult {
        let Some(named) = &scope.named else {
            return execution_result(&report);
        };
        match self.handles.hand_out(named).await {
            Ok(handle) => {
                let mut result = execution_result(&report);
                with_session_handle(&mut result, handle);
                result
            }
            Err(error) => {
                report.warnings.push(error.to_string());
                execution_result(&report)
            }
        }
    }
}

impl ToolweaveServer {
    /// With `--state`, a retry (its `requestState`, or `execute_code`'s `"resume"`) of an
    /// execution another copy holds: handed over to that copy, whose answer it is. `None` when
    /// this copy holds it or it is no retry.
    async fn hand_over(
        &self,
        request: &CallToolRequestParams,
        caller: &str,
        context: &RequestContext<RoleServer>,
    ) -> Option<Result<CallToolResponse, ErrorData>> {
        let shared = self.shared.as_ref()?;
        let state = request.request_state.as_deref().or_else(|| {
            request
                .arguments
                .as_ref()
                .and_then(|arguments| arguments.get("resume"))
                .and_then(Value::as_str)
        })?;
        let execution = self.rounds.elsewhere(state, caller, &request.name)?;
        let parts = context.extensions.get::<axum::http::request::Parts>();
        if parts.is_some_and(|parts| parts.headers.contains_key(handover::HANDED_OVER)) {
            // Handed over already: this copy was named as the holder, and resumes it or says why not.
            return None;
        }
        let holder = match shared.state.holder(&execution).await {
            Ok(Some(holder)) if holder != shared.own => holder,
            Ok(Some(_)) => return None,
            Ok(None) => {
                return Some(Err(ErrorData::invalid_params(
                    format!(
                        "toolweave cannot resume this call: no copy of toolweave holds the                          execution it names: it was answered, given up on after {} minutes                          without a retry, or the copy that ran it stopped; run the code again",
                        rounds::PAUSE_TTL.as_secs() / 60
                    ),
                    None,
                )));
            }
            Err(why) => {
                return Some(Err(ErrorData::invalid_params(
                    format!("toolweave cannot resume this call: {why}"),
                    None,
                )));
            }
        };
        tracing::info!(
            execution = %execution,
            %holder,
            "a retry is handed over to the copy that holds its paused execution"
        );
        let meta = serde_json::to_value(&context.meta).unwrap_or(Value::Null);
        Some(handover::hand_over(&shared.client, &holder, request, &meta, parts, &context.ct).await)
    }

    /// With `--state`, a request about task `id` that another copy runs: sent on to that copy,
    /// whose result it is. `None` when this copy holds the task, no copy does, or the request
    /// was sent on already (this copy answers it, as for an unknown task).
    async fn task_elsewhere<P: serde::Serialize>(
        &self,
        method: &str,
        id: &str,
        params: &P,
        context: &RequestContext<RoleServer>,
    ) -> Option<Result<Value, ErrorData>> {
        let shared = self.shared.as_ref()?;
        if self.tasks.holds(id) {
            return None;
        }
        let parts = context.extensions.get::<axum::http::request::Parts>();
        if parts.is_some_and(|parts| parts.headers.contains_key(handover::HANDED_OVER)) {
            return None;
        }
        let holder = match shared.state.holder(id).await {
            Ok(Some(holder)) if holder != shared.own => holder,
            Ok(_) => return None,
            Err(why) => {
                return Some(Err(ErrorData::invalid_params(
                    format!("toolweave cannot reach this task: {why}"),
                    None,
                )));
            }
        };
        tracing::info!(task = id, %holder, method, "a task's request is sent on to the copy that runs it");
        let params = match serde_json::to_value(params) {
            Ok(params) => params,
            Err(error) => return Some(Err(ErrorData::internal_error(error.to_string(), None))),
        };
        let meta = serde_json::to_value(&context.meta).unwrap_or(Value::Null);
        Some(
            handover::task_to_holder(
                &shared.client,
                &holder,
                method,
                params,
                &meta,
                parts,
                &context.ct,
            )
            .await,
        )
    }

    /// A call of a tool listed directly, by `caller_name` under the name `name`: as a task for
    /// a client of the tasks extension, across rounds for a client speaking MCP 2026-07-28 (its
    /// questions are asked as part of this call: `rounds.rs`), else within this call.
    async fn call_listed_directly(
        &self,
        call: Direct,
        caller_name: &str,
        name: &str,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let Direct {
            server,
            tool,
            arguments,
            caller,
        } = call;
        if wants_task(&context) {
            let this = self.clone();
            let work = move |mailbox, _waits, cancel, progress| async move {
                let mut context = in_rounds(context, mailbox, None, cancel);
                context.extensions.insert(progress);
                this.call_direct(server, tool, arguments, &context, caller)
                    .await
            };
            return self.start_task(caller_name, name, work).await;
        }
        if modern(&context) {
            let this = self.clone();
            let ct = context.ct.clone();
            let work = move |mailbox, _waits, cancel| async move {
                let context = in_rounds(context, mailbox, None, cancel);
                this.call_direct(server, tool, arguments, &context, caller)
                    .await
            };
            return self.rounds.start(caller_name, name, work, &ct).await;
        }
        CallToolResponse::Complete(
            self.call_direct(server, tool, arguments, &context, caller)
                .await,
        )
    }

    /// The retry of a call that answered with questions (MCP 2026-07-28): the paused work goes on
    /// with the client's answers.
    async fn resume(
        &self,
        request: &CallToolRequestParams,
        caller: &str,
        ct: &tokio_util::sync::CancellationToken,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(state) = request.request_state.as_deref() else {
            return Err(invalid(
                "\"inputResponses\" came without the \"requestState\" of the answer that asked \
                 for them; send both back as that answer gave them",
            ));
        };
        let responses = request.input_responses.clone().unwrap_or_default();
        self.rounds
            .resume(state, responses, caller, &request.name, "requestState", ct)
            .await
    }

    /// `execute_code` with `"resume"`: waits for the answer of the execution that answered early
    /// (a call of it waits at the approval page) and gave that state.
    async fn resume_execution(
        &self,
        arguments: &Map<String, Value>,
        warnings: &[String],
        caller: &str,
        ct: &tokio_util::sync::CancellationToken,
    ) -> CallToolResponse {
        let Some(Value::String(state)) = arguments.get("resume") else {
            return CallToolResponse::Complete(invalid_arguments(invalid(
                "\"resume\" must be a string: the \"resume\" of an execute_code answer that \
                 said the execution waits",
            )));
        };
        let mut warnings = warnings.to_vec();
        if arguments
            .get("code")
            .and_then(Value::as_str)
            .is_some_and(|code| !code.trim().is_empty())
        {
            warnings.push(
                "\"code\" was not run: with \"resume\", execute_code waits for the answer of the \
                 execution that is already running"
                    .to_owned(),
            );
        }
        let resumed = self
            .rounds
            .resume(
                state,
                rmcp::model::InputResponses::new(),
                caller,
                EXECUTE_CODE,
                "\"resume\"",
                ct,
            )
            .await;
        match resumed {
            Ok(CallToolResponse::Complete(result)) => {
                CallToolResponse::Complete(with_warnings(result, &warnings))
            }
            Ok(other) => other,
            Err(error) => {
                CallToolResponse::Complete(with_warnings(invalid_arguments(error), &warnings))
            }
        }
    }

    /// The answer to an `execute_code` call: the execution's result, or the arguments' error.
    async fn execute_answer(
        &self,
        arguments: &Map<String, Value>,
        warnings: Vec<String>,
        context: &RequestContext<RoleServer>,
        caller: Option<Arc<http::IdentityToken>>,
    ) -> CallToolResult {
        match self
            .execute(arguments, warnings.clone(), context, caller)
            .await
        {
            Ok(result) => result,
            Err(error) => with_warnings(invalid_arguments(error), &warnings),
        }
    }
}

/// `allowedTools` of `execute_code`: globs over a tool's names, compiled as the policy's are.
fn allowed_tools(arguments: &Map<String, Value>) -> Result<Option<ToolGlobs>, ErrorData> {
    let patterns: Vec<String> = match arguments.get("allowedTools") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(pattern) => Ok(pattern.clone()),
                _ => Err(invalid(
                    "\"allowedTools\" must be an array of strings such as [\"github.get_*\"]",
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(invalid(
                "\"allowedTools\" must be an array of strings such as [\"github.get_*\"]",
            ));
        }
    };
    ToolGlobs::new(&patterns, "allowedTools")
        .map(Some)
        .map_err(invalid)
}

/// `timeoutMs` of `execute_code`: a whole number of milliseconds, 1 or more.
fn requested_timeout(
    arguments: &Map<String, Value>,
) -> Result<Option<std::time::Duration>, ErrorData> {
    match arguments.get("timeoutMs") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(number)) => match number.as_u64() {
            Some(millis) if millis > 0 => Ok(Some(std::time::Duration::from_millis(millis))),
            _ => Err(invalid(
                "\"timeoutMs\" must be a whole number of milliseconds, 1 or more",
            )),
        },
        Some(_) => Err(invalid(
            "\"timeoutMs\" must be a whole number of milliseconds, 1 or more",
        )),
    }
}

impl ToolweaveServer {
    /// The refusal of an execution or direct call past this session's `--rate-limit`, or past
    /// the rate of the identity it is made as, if it is.
    fn rate_limited(&self, caller: Option<&http::IdentityToken>) -> Option<CallToolResult> {
        let session = || {
            let not_until = self.limiter.as_ref()?.check().err()?;
            use governor::clock::Clock;
            let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
            let per_minute = self.rate.map_or(0, |quota| quota.burst_size().get());
            Some((
                wait,
                format!("this session may start {per_minute} executions a minute (--rate-limit)"),
                "too many executions in this session".to_owned(),
            ))
        };
        let identity = || {
            let caller = caller?;
            let (wait, per_minute) = caller.rate_limited()?;
            let name = caller.identity().name();
            Some((
                wait,
                format!(
                    "identity \"{name}\" may start {per_minute} executions a minute, over all its \
                     sessions (its rateLimit in the settings file)"
                ),
                format!("too many executions for identity \"{name}\""),
            ))
        };
        let (wait, why, message) = session().or_else(identity)?;
        if let Some(metrics) = &self.metrics {
            metrics.rate_limit_refusal();
        }
        let mut result = CallToolResult::error(vec![ContentBlock::text(format!(
            "RateLimit: {why}; try again in {:.1} s",
            wait.as_secs_f64().max(0.1)
        ))]);
        result.structured_content = Some(json!({
            "error": {
                "kind": "RateLimit",
                "message": message,
                "retryAfterMs": wait.as_millis() as u64,
            },
        }));
        Some(result)
    }

    /// Runs `work` with a listener for its upstream calls: their progress and log notices go to
    /// this request's client while it runs, and those that arrived by its end go before its
    /// answer; upstream servers' requests reach the client in the name of this request.
    async fn with_notices<T, F: Future<Output = T>>(
        &self,
        context: &RequestContext<RoleServer>,
        work: impl FnOnce(Listener) -> F,
    ) -> T {
        let (listener, notices) = Listener::new();
        let listener = listener
            .with_client(Arc::new(self.request_client(context)))
            .with_trace(telemetry::caller_trace(&context.meta));
        let (finished, done) = oneshot::channel();
        let working = async {
            let value = work(listener).await;
            let _ = finished.send(());
            value
        };
        let level = self.request_log_level(context);
        let forwarding = forward_notices(
            notices,
            done,
            &context.peer,
            context.meta.get_progress_token(),
            level,
            context.extensions.get::<tasks::TaskProgress>().cloned(),
        );
        // Both in this task, tracked like executions: serving waits for them before it ends.
        let (value, ()) = self
            .executions
            .track_future(async { tokio::join!(working, forwarding) })
            .await;
        value
    }

    /// Calls `server`'s tool `tool`, listed directly, for the client: the path of a call from
    /// code (the gateway's), the session's rate limit, and the server's answer as it sent it.
    async fn call_direct(
        &self,
        server: String,
        tool: String,
        arguments: Map<String, Value>,
        context: &RequestContext<RoleServer>,
        caller: Option<Arc<http::IdentityToken>>,
    ) -> CallToolResult {
        if let Some(refusal) = self.rate_limited(caller.as_deref()) {
            return refusal;
        }
        let session = self.session_name(context);
        self.with_notices(context, |listener| {
            self.gateway.call_direct(
                DirectCall {
                    server,
                    tool,
                    arguments,
                    listener: Some(listener),
                    session,
                    approver: Some(Arc::new(AskTheClient::new(
                        self.request_client(context),
                        None,
                        self.approvals.clone(),
                        self.pages.clone(),
                        self.request_log_level(context),
                    ))),
                    identity: caller.map(|caller| caller.identity().clone()),
                    // A request without a protocol session has no session for its tokens.
                    state: (!Self::sessionless(context)).then(|| self.state.clone()),
                },
                context.ct.clone(),
            )
        })
        .await
    }
}

/// What a describe answer holds as data: which tools were described (with their JSON Schemas
/// when asked for), and what was not. The declarations are in the text only: copying them here
/// would make a client that forwards both pay for every tool twice.
fn described_structured(answer: &toolweave_core::DescribeAnswer) -> Value {
    let tools: Vec<Value> = answer
        .tools
        .iter()
        .map(|tool| {
            let mut described =
                json!({ "name": tool.name, "server": tool.server, "tool": tool.tool });
            if let Some(schema) = &tool.input_schema {
                described["inputSchema"] = schema.clone();
            }
            if let Some(schema) = &tool.output_schema {
                described["outputSchema"] = schema.clone();
            }
            described
        })
        .collect();
    let mut structured = json!({ "tools": tools });
    if !answer.unknown.is_empty() {
        structured["unknown"] = json!(answer.unknown);
    }
    if !answer.unready.is_empty() {
        structured["unready"] = json!(answer.unready);
    }
    if !answer.held.is_empty() {
        structured["held"] = json!(answer.held);
    }
    if !answer.omitted.is_empty() {
        structured["omitted"] = json!(answer.omitted);
    }
    if !answer.unavailable.is_empty() {
        structured["unavailable"] = json!(answer.unavailable);
    }
    structured
}

/// The MCP result for one execution: text for the model (the value, the warnings, the console
/// lines), and `structuredContent` as `execute_code`'s output schema has it (the value or the
/// error, the warnings, the stats). The text carries everything the structured copy does but the
/// stats, as MCP asks for clients that read only text; the console lines are not copied into it,
/// so a client that forwards both does not pay for them twice.
pub fn execution_result(report: &toolweave_core::ExecutionReport) -> CallToolResult {
    let text = toolweave_core::execution_text(report);
    let mut stats = json!(report.stats);
    // A tenth of a millisecond says enough, in a few tokens where the float took a dozen.
    stats["durationMs"] = json!((report.stats.duration_ms * 10.0).round() / 10.0);
    // The blocks code emitted or returned follow the text.
    let mut content = Vec::with_capacity(1 + report.blocks.len());
    content.push(ContentBlock::text(text));
    content.extend(report.blocks.iter().cloned());
    let result = match &report.result {
        Ok(value) => {
            let mut result = CallToolResult::success(content);
            result.structured_content = Some(json!({ "result": value, "stats": stats }));
            result
        }
        Err(error) => {
            let mut result = CallToolResult::error(content);
            result.structured_content = Some(json!({
                "error": { "kind": error.kind(), "message": error.to_string() },
                "stats": stats,
            }));
            result
        }
    };
    with_warnings_structured(result, &report.warnings)
}

/// `result` with the handle of its session: under `session` in its structured content, and one
/// line of its text.
fn with_session_handle(result: &mut CallToolResult, handle: String) {
    let line = format!(
        "\nSession: {handle} (pass it as \"session\" to execute_code to keep this session's \
         store, result handles and approvals)"
    );
    match result.content.first_mut() {
        Some(ContentBlock::Text(text)) => text.text.push_str(&line),
        _ => result
            .content
            .insert(0, ContentBlock::text(line.trim_start())),
    }
    if let Some(Value::Object(structured)) = &mut result.structured_content {
        structured.insert("session".to_owned(), Value::String(handle));
    }
}

/// `result` with `warnings` under `warnings` in its structured content, after those it has (its
/// text has them).
fn with_warnings_structured(mut result: CallToolResult, warnings: &[String]) -> CallToolResult {
    if let Some(Value::Object(structured)) = &mut result.structured_content
        && !warnings.is_empty()
    {
        match structured.get_mut("warnings") {
            Some(Value::Array(had)) => had.extend(warnings.iter().map(|warning| json!(warning))),
            _ => {
                structured.insert("warnings".to_owned(), json!(warnings));
            }
        }
    }
    result
}

/// Sends the notices of an execution (or a direct call) to its client until `done`: upstream
/// servers' progress and the code's `progress(...)` as progress of the request (when the client
/// asked for progress with a token), log messages at or above `level` (none without one: a 2026-07-28
/// request that did not ask for them) (upstream servers', from
/// `toolweave/<server>`, and the code's console lines, from `toolweave/code`). The code's progress
/// without a token goes as a log message at info level. The code's progress is sent at most
/// every [`CODE_PROGRESS_INTERVAL`]: the latest waits for the interval, and the last is always
/// sent, before the answer.
async fn forward_notices(
    mut notices: mpsc::Receiver<Notice>,
    mut done: oneshot::Receiver<()>,
    peer: &Peer<RoleServer>,
    progress_token: Option<ProgressToken>,
    level: Option<LoggingLevel>,
    task: Option<tasks::TaskProgress>,
) {
    let mut sender = NoticeSender {
        peer,
        progress_token,
        level,
        last_progress: 0.0,
        task,
    };
    // The code's progress waiting for its interval, and when the last one went.
    let mut held: Option<Notice> = None;
    let mut last_code_progress: Option<tokio::time::Instant> = None;
    loop {
        let due = last_code_progress.map(|sent| sent + CODE_PROGRESS_INTERVAL);
        tokio::select! {
            biased;
            notice = notices.recv() => match notice {
                Some(notice @ Notice::CodeProgress { .. }) => {
                    let now = tokio::time::Instant::now();
                    if due.is_some_and(|due| now < due) {
                        held = Some(notice);
                    } else {
                        last_code_progress = Some(now);
                        sender.send(notice).await;
                    }
                }
                Some(notice) => sender.send(notice).await,
                None => break,
            },
            () = tokio::time::sleep_until(due.unwrap_or_else(tokio::time::Instant::now)), if held.is_some() => {
                if let Some(notice) = held.take() {
                    last_code_progress = Some(tokio::time::Instant::now());
                    sender.send(notice).await;
                }
            }
            _ = &mut done => break,
        }
    }
    while let Ok(notice) = notices.try_recv() {
        match notice {
            Notice::CodeProgress { .. } => held = Some(notice),
            notice => sender.send(notice).await,
        }
    }
    if let Some(notice) = held {
        sender.send(notice).await;
    }
}

/// The most of a tool name a client sent that an answer echoes.
const MAX_ECHOED_NAME: usize = 256;

/// The least time between two progress notifications of an execution's code.
const CODE_PROGRESS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

/// Where one request's notices go, and what was sent of its progress (which must only rise).
struct NoticeSender<'a> {
    peer: &'a Peer<RoleServer>,
    progress_token: Option<ProgressToken>,
    /// The least severe level sent; `None`: no log message is sent.
    level: Option<LoggingLevel>,
    last_progress: f64,
    /// The task the request runs as, whose status shows the latest progress.
    task: Option<tasks::TaskProgress>,
}

impl NoticeSender<'_> {
    async fn send(&mut self, notice: Notice) {
        match notice {
            Notice::Progress {
                server,
                tool,
                progress,
                total,
                message,
            } => {
                let mut text = format!("{server}.{tool}: {progress}");
                if let Some(total) = total {
                    text.push_str(&format!("/{total}"));
                }
                if let Some(message) = message {
                    text.push_str(&format!(" {message}"));
                }
                if let Some(task) = &self.task {
                    task.note(&text);
                }
                let Some(token) = self.progress_token.clone() else {
                    return;
                };
                // Each upstream call counts on its own; the client's count must only rise.
                self.last_progress += 1.0;
                let mut params = ProgressNotificationParam::new(token, self.last_progress);
                params.message = Some(text);
                self.progress(params).await;
            }
            Notice::CodeProgress {
                progress,
                total,
                message,
            } => {
                if let Some(task) = &self.task {
                    task.note(&code_progress_text(progress, total, message.as_deref()));
                }
                self.code_progress(progress, total, message).await;
            }
            Notice::Log {
                server,
                level,
                logger,
                data,
            } => {
                let logger = match logger {
                    Some(logger) => format!("toolweave/{server}/{logger}"),
                    None => format!("toolweave/{server}"),
                };
                self.log(level, logger, data).await;
            }
            Notice::CodeLog { level, text } => {
                self.log(level, "toolweave/code".to_owned(), json!(text))
                    .await;
            }
        }
    }

    /// The code's `progress(...)`: progress of the request when the client gave a token, else a
    /// log message at info level.
    async fn code_progress(&mut self, progress: f64, total: Option<f64>, message: Option<String>) {
        match self.progress_token.clone() {
            // A value that does not rise is not sent: MCP requires progress to increase.
            Some(token) if progress > self.last_progress => {
                self.last_progress = progress;
                let mut params = ProgressNotificationParam::new(token, progress);
                params.total = total;
                params.message = message;
                self.progress(params).await;
            }
            Some(_) => {}
            None => {
                let text = code_progress_text(progress, total, message.as_deref());
                self.log(LoggingLevel::Info, "toolweave/code".to_owned(), json!(text))
                    .await;
            }
        }
    }

    async fn progress(&self, params: ProgressNotificationParam) {
        if let Err(error) = self.peer.notify_progress(params).await {
            tracing::debug!(%error, "a progress notification could not be sent");
        }
    }

    async fn log(&self, level: LoggingLevel, logger: String, data: Value) {
        if self
            .level
            .is_none_or(|least| severity(level) < severity(least))
        {
            return;
        }
        let mut params = LoggingMessageNotificationParam::new(level, data);
        params.logger = Some(logger);
        if let Err(error) = self.peer.notify_logging_message(params).await {
            tracing::debug!(%error, "a log notification could not be sent");
        }
    }
}

/// The code's `progress(done, total, message)` as one line: `progress 2/3: message`.
fn code_progress_text(progress: f64, total: Option<f64>, message: Option<&str>) -> String {
    let mut text = match total {
        Some(total) => format!("progress {progress}/{total}"),
        None => format!("progress {progress}"),
    };
    if let Some(message) = message {
        text.push_str(&format!(": {message}"));
    }
    text
}

/// The SHA-256 of `code`, in hex, as the audit log and the approval page show it.
fn code_sha256(code: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(code.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// MCP log levels, least severe first.
pub(crate) fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// The optional `"language"` of search_tools and describe_tools.
fn flavor(arguments: &Map<String, Value>) -> Result<Flavor, ErrorData> {
    match arguments.get("language") {
        None | Some(Value::Null) => Ok(Flavor::TypeScript),
        Some(Value::String(name)) => match Language::from_name(name) {
            Some(language) => Ok(toolweave_core::flavor_of(language)),
            None => Err(invalid(format!(
                "unknown \"language\" {name:?}: use \"typescript\" or \"python\""
            ))),
        },
        Some(_) => Err(invalid("\"language\" must be a string")),
    }
}

/// Arguments the tool cannot use, and tools that do not exist, are answered as failed calls the
/// model reads and corrects, not as protocol errors its client may hide.
fn invalid_arguments(error: ErrorData) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(error.message.to_string())]);
    result.structured_content = Some(json!({
        "error": { "kind": "invalid_arguments", "message": error.message },
    }));
    result
}

/// `result` with `warnings` after its text, one line each, and under `warnings` in its
/// structured content.
fn with_warnings(mut result: CallToolResult, warnings: &[String]) -> CallToolResult {
    if warnings.is_empty() {
        return result;
    }
    let lines: String = warnings
        .iter()
        .map(|warning| format!("\nWarning: {warning}"))
        .collect();
    match result.content.first_mut() {
        Some(ContentBlock::Text(text)) => text.text.push_str(&lines),
        _ => result.content.push(ContentBlock::text(lines.trim_start())),
    }
    with_warnings_structured(result, warnings)
}

fn invalid(message: impl Into<std::borrow::Cow<'static, str>>) -> ErrorData {
    ErrorData::invalid_params(message, None)
}

impl ServerHandler for ToolweaveServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(if self.listing.follows_catalog() {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_logging()
                .enable_tasks()
                .build()
        } else {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .enable_tasks()
                .build()
        })
        .with_server_info(
            Implementation::new("toolweave", env!("CARGO_PKG_VERSION")).with_title("toolweave"),
        )
        .with_instructions(
            "Call upstream MCP tools from code: find them with search_tools, read their types \
                 with describe_tools, then run TypeScript with execute_code.",
        )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        // The session is opened as the identity of this first request.
        self.caller(&context)
            .map_err(|message| ErrorData::invalid_request(message, None))?;
        let mut answer = self.negotiate_initialize(&request)?;
        // Tasks are the extension of MCP 2026-07-28 requests: a session opened with `initialize`
        // (2025-11-25 and before) is not offered them.
        if let Some(extensions) = answer.capabilities.extensions.as_mut() {
            extensions.remove(rmcp::model::TASKS_EXTENSION_ID);
            if extensions.is_empty() {
                answer.capabilities.extensions = None;
            }
        }
        // Upstream servers' requests may reach this client from now on; over stdio, upstream
        // servers start once they can be told what it supports.
        let client = Arc::new(self.client_peer(&context.peer, None));
        let connection = self
            .gateway
            .upstream()
            .client_connected(client, Some(&request.capabilities));
        *self
            .connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(connection);
        if self.listing.follows_catalog() {
            self.listing.join(self.session, context.peer.clone());
            *self
                .joined
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Joined {
                listing: Arc::downgrade(&self.listing),
                session: self.session,
            });
        }
        Ok(answer)
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        self.requests.roots_changed();
        self.gateway.upstream().roots_changed().await;
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        // A client that discovers in MCP 2026-07-28 sends no `initialize`: over stdio, upstream
        // servers start now rather than at its first request.
        if modern(&context) {
            self.gateway.upstream().client_declares_per_request();
        }
        // The same for every caller: what toolweave serves, not what a caller may call.
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        )
        .with_ttl_ms(DISCOVER_TTL_MS)
        .with_cache_scope(CacheScope::Public))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        check_log_level(&context)?;
        self.connect_per_request(&context);
        let listed = self.listing.current(&self.gateway, true).await;
        // A list made while servers still start changes as each becomes ready.
        let ttl_ms = if !self.listing.follows_catalog() {
            DISCOVER_TTL_MS
        } else if self
            .gateway
            .upstream()
            .status()
            .iter()
            .any(|status| matches!(status.state, toolweave_core::ServerState::Starting))
        {
            0
        } else {
            FOLLOWING_LIST_TTL_MS
        };
        // Every identity is shown the same list today; with identities set it is still cached
        // per token, since each token's rules decide which of the tools it may call.
        let scope = if self.per_identity {
            CacheScope::Private
        } else {
            CacheScope::Public
        };
        Ok(ListToolsResult::with_all_items(listed.show())
            .with_ttl_ms(ttl_ms)
            .with_cache_scope(scope))
    }

    /// `subscriptions/listen` (MCP 2026-07-28): tool list changes, for a list that can change;
    /// nothing else toolweave sends is a change of this kind.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        if self.listing.follows_catalog() && requested.tools_list_changed == Some(true) {
            accepted.tools_list_changed = Some(true);
        }
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let _listening = (context.accepted().tools_list_changed == Some(true))
            .then(|| self.listing.listen(context.sink().clone()));
        context.cancelled().await;
        Ok(())
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.listing
            .snapshot()
            .tools
            .iter()
            .find(|tool| tool.name == name)
            .cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = self
            .caller(&context)
            .map_err(|message| ErrorData::invalid_request(message, None))?;
        check_log_level(&context)?;
        self.connect_per_request(&context);
        let caller_name = caller
            .as_ref()
            .map(|caller| caller.identity().name().to_owned())
            .unwrap_or_default();
        if let Some(response) = self.hand_over(&request, &caller_name, &context).await {
            return response;
        }
        if request.request_state.is_some() || request.input_responses.is_some() {
            return self.resume(&request, &caller_name, &context.ct).await;
        }
        let arguments = request.arguments.unwrap_or_default();
        let warnings = tools::unknown_argument_warnings(&request.name, &arguments);
        let mut listed = self.listing.snapshot();
        let mut listed_now = listed.tools.iter().any(|tool| tool.name == request.name);
        if !listed_now && !listed.version_known() && self.listing.follows_catalog() {
            // Called before the list was made (a client that kept the names of another session).
            listed = self.listing.current(&self.gateway, true).await;
            listed_now = listed.tools.iter().any(|tool| tool.name == request.name);
        }
        let own = listed_now && !listed.is_direct(&request.name);
        if let Some((server, tool)) = listed.direct(&request.name).cloned() {
            let call = Direct {
                server,
                tool,
                arguments,
                caller,
            };
            return Ok(self
                .call_listed_directly(call, &caller_name, &request.name, context)
                .await);
        }
        // A client speaking MCP 2026-07-28 that declares the tasks extension gets a task for an
        // execution (`tasks.rs`).
        let as_task = wants_task(&context);
        if request.name == EXECUTE_CODE {
            if arguments.contains_key("resume") {
                return Ok(self
                    .resume_execution(&arguments, &warnings, &caller_name, &context.ct)
                    .await);
            }
            if as_task {
                let this = self.clone();
                let work = move |mailbox, waits, cancel, progress| async move {
                    let mut context = in_rounds(context, mailbox, Some(waits), cancel);
                    context.extensions.insert(progress);
                    this.execute_answer(&arguments, warnings, &context, caller)
                        .await
                };
                return Ok(self.start_task(&caller_name, &request.name, work).await);
            }
            // Whatever the client speaks, the execution runs on across rounds: a round also ends
            // early when a call waits at the approval page, which the client cannot show.
            let this = self.clone();
            let ct = context.ct.clone();
            let work = move |mailbox, waits, cancel| async move {
                let context = in_rounds(context, mailbox, Some(waits), cancel);
                this.execute_answer(&arguments, warnings, &context, caller)
                    .await
            };
            return Ok(self
                .rounds
                .start(&caller_name, &request.name, work, &ct)
                .await);
        }
        let result = match request.name.as_ref() {
            SEARCH_TOOLS if own => self.search(&arguments).await,
            DESCRIBE_TOOLS if own => self.describe(&arguments).await,
            other => Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {:?}: toolweave has {}",
                    toolweave_core::cut(other.to_owned(), MAX_ECHOED_NAME),
                    listed.names()
                ),
                None,
            )),
        };
        let result = result.unwrap_or_else(invalid_arguments);
        Ok(CallToolResponse::Complete(with_warnings(result, &warnings)))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let caller = self.caller_name(&context)?;
        if let Some(answer) = self
            .task_elsewhere("tasks/get", &request.task_id, &request, &context)
            .await
        {
            return serde_json::from_value(answer?).map_err(|error| {
                ErrorData::internal_error(
                    format!("the task's copy answered tasks/get unreadably: {error}"),
                    None,
                )
            });
        }
        self.tasks.get(&request.task_id, &caller)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = self.caller_name(&context)?;
        if let Some(answer) = self
            .task_elsewhere("tasks/update", &request.task_id, &request, &context)
            .await
        {
            return answer.map(|_| ());
        }
        self.tasks
            .update(&request.task_id, &caller, request.input_responses);
        Ok(())
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = self.caller_name(&context)?;
        if let Some(answer) = self
            .task_elsewhere("tasks/cancel", &request.task_id, &request, &context)
            .await
        {
            return answer.map(|_| ());
        }
        self.tasks.cancel(&request.task_id, &caller);
        Ok(())
    }

    /// rmcp hands over a request it could not match: one for a method toolweave serves whose
    /// params did not decode (`-32602`, saying what is wrong), or one for another method
    /// (`-32601`).
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if modern(&context)
            && let Some(error) = incoming::removed_method(&request.method)
        {
            return Err(error);
        }
        Err(incoming::unserved_request(
            &request.method,
            request.params.as_ref(),
        ))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if modern(&context)
            && let Some(error) = incoming::removed_method("logging/setLevel")
        {
            return Err(error);
        }
        *self
            .log_level
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = request.level;
        Ok(())
    }
}
