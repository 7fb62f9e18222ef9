//! The manager: every configured server's state, and the calls that wait on it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, GetMeta, RequestId, ServerResult, Tool,
};
use rmcp::service::{Peer, PeerRequestOptions, ServiceError};
use serde_json::{Map, Value};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use toolweave_catalog::{Annotations, SchemaTooDeep, ToolDefinition, ToolSchema};
use toolweave_config::{Config, ServerConfig, Transport};

use crate::auth::Logins;
use crate::breaker::Breaker;
use crate::error::LimitFrom;
use crate::life::{Ending, Launch, LifeEvents, Ready};
use crate::notices::{Listener, Routes, TraceContext};
use crate::requests::{ClientConnection, ClientSession, Clients};
use crate::status::{ServerState, ServerStatus};
use crate::wire::Wire;
use crate::{Error, Options, Result};

/// How long `shutdown` waits for every server's task before giving up on them (each task kills
/// its child well within this).
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(5);
/// Beyond the startup timeout, how long a waiter gives a starting server's task to record its
/// failure (killing the child and reading the rest of its stderr take a moment).
const SETTLE_GRACE: Duration = Duration::from_secs(2);
/// After a call lost its connection, how long it waits for the server's task to record why.
const EXIT_REPORT_WAIT: Duration = Duration::from_secs(2);
/// First wait before starting a server again after it exited or failed to start; doubles for each
/// failure in a row.
const FIRST_RESTART_DELAY: Duration = Duration::from_secs(1);
/// Longest wait between restarts.
const MAX_RESTART_DELAY: Duration = Duration::from_secs(30);
/// A server that ran this long before it exited starts its crash count afresh.
const STABLE_UPTIME: Duration = Duration::from_secs(60);

/// Every configured upstream server, each with its own background task.
pub struct UpstreamManager {
    shared: Arc<Shared>,
}

/// What the manager and the slots of the servers' lives share.
struct Shared {
    options: Options,
    /// Where remote servers' logins are kept (`None`: nowhere, so none is used).
    logins: Option<Logins>,
    servers: Vec<Server>,
    /// Bumped on every state change.
    version: watch::Sender<u64>,
    /// Cancelled by `shutdown` (or when the manager is dropped): every task stops its child.
    shutdown: CancellationToken,
    tasks: TaskTracker,
    /// The client sessions toolweave serves: what servers are told it supports, and where
    /// their requests go.
    clients: Arc<Clients>,
}

/// One configured server.
struct Server {
    config: Arc<ServerConfig>,
    /// Woken by the client handler on `notifications/tools/list_changed`.
    tools_changed: Arc<Notify>,
    /// Where its progress and log notifications for calls in flight go.
    routes: Arc<Routes>,
    slot: Mutex<Slot>,
}

/// Where one life of server `index` tells what became of it: its slot, while `life` is the current life.
struct LifeSlot {
    shared: Arc<Shared>,
    index: usize,
    life: u32,
}

impl LifeEvents for LifeSlot {
    fn ready(&self, ready: Ready) {
        self.shared.set_ready(self.index, self.life, ready);
    }

    fn tools_listed(&self, tools: Vec<Tool>) {
        self.shared.set_tools(self.index, self.life, tools);
    }

    fn ended(&self, ending: Ending) {
        self.shared.finish(self.index, self.life, ending);
    }
}

struct Slot {
    state: State,
    /// Processes started so far; identifies the current life.
    starts: u32,
    /// Failures in a row (exits, lost connections, failed starts), for the delay before the next
    /// start.
    failures: u32,
    /// The server's `toolTimeouts` by the tool's name as the server lists it, each entry keyed
    /// by that name or by the tool's name in code (`get_sum` for `get-sum`), as of the last
    /// tool list.
    tool_timeouts: BTreeMap<String, Duration>,
}

enum State {
    Starting,
    Ready {
        peer: Peer<RoleClient>,
        tools: Arc<Vec<ToolDefinition>>,
        process_id: Option<u32>,
        breaker: Breaker,
        wire: Arc<Wire>,
        instructions: Option<Arc<str>>,
    },
    Down {
        error: Error,
        at: Instant,
    },
    Stopped,
}

/// A ready server's connection, as a caller takes it.
struct Connection {
    peer: Peer<RoleClient>,
    tools: Arc<Vec<ToolDefinition>>,
    life: u32,
    /// Ends the life when a call finds a remote server's connection broken.
    breaker: Breaker,
    /// What crosses the connection: unreadable answers, and when requests went out.
    wire: Arc<Wire>,
}

/// How one tool call is made, beyond its server, tool and arguments.
#[derive(Debug, Clone, Default)]
pub struct CallOptions<'a> {
    /// Overrides the call's timeout (the tool's own from the server's `toolTimeouts`, else the
    /// server's `timeout`, else `--tool-timeout-ms`).
    pub timeout: Option<Duration>,
    /// Abandons the call when cancelled: rmcp tells the server, and the answer is
    /// [`Error::Cancelled`].
    pub cancel: CancellationToken,
    /// Where the server's progress and log notifications about the call go (see
    /// [`Notice`](crate::Notice) for how they are told apart).
    pub listener: Option<&'a Listener>,
    /// When the caller took the call. The timeout runs from then (leaving out any time the server
    /// takes to finish starting), and a call that times out says how much of that time it waited
    /// in toolweave before it was sent. `None`: when the call is made.
    pub taken: Option<Instant>,
}

impl UpstreamManager {
    /// Called inside a tokio runtime; spawns every server's start in parallel in the background
    /// and returns at once. Remote servers' logins are the ones `toolweave login` keeps.
    pub fn start(config: &Config, options: Options) -> Arc<Self> {
        Self::start_with_logins(config, options, Logins::from_environment())
    }

    /// [`start`](Self::start), with remote servers' logins kept in `logins`.
    pub fn start_with_logins(
        config: &Config,
        options: Options,
        logins: Option<Logins>,
    ) -> Arc<Self> {
        let servers = config
            .servers
            .iter()
            .map(|config| Server {
                config: Arc::new(config.clone()),
                tools_changed: Arc::new(Notify::new()),
                routes: Arc::new(Routes::default()),
                slot: Mutex::new(Slot {
                    state: State::Starting,
                    starts: 0,
                    failures: 0,
                    tool_timeouts: BTreeMap::new(),
                }),
            })
            .collect();
        let (version, _) = watch::channel(0);
        let shared = Arc::new(Shared {
            options,
            logins,
            servers,
            version,
            shutdown: CancellationToken::new(),
            tasks: TaskTracker::new(),
            clients: Arc::new(Clients::new(options.client_sessions)),
        });
        for (index, server) in shared.servers.iter().enumerate() {
            shared.launch(index, &mut server.lock());
        }
        Arc::new(Self { shared })
    }

    /// Configured server names, in config order.
    pub fn server_names(&self) -> Vec<String> {
        self.shared
            .servers
            .iter()
            .map(|server| server.config.name.clone())
            .collect()
    }

    /// A version number bumped on every state change (a server became ready, failed, exited,
    /// changed its tool list).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.version.subscribe()
    }

    /// Waits (bounded by the startup timeout) until every server is ready or failed; each
    /// server's tools or why not, in config order.
    pub async fn all_tools(&self) -> Vec<(String, Result<Vec<ToolDefinition>>)> {
        let waits = self
            .shared
            .servers
            .iter()
            .enumerate()
            .map(|(index, server)| async move {
                let tools = self
                    .connection(index)
                    .await
                    .map(|connection| connection.tools.as_ref().clone());
                (server.config.name.clone(), tools)
            });
        futures::future::join_all(waits).await
    }

    /// Waits (bounded by the startup timeout) until every server is ready or failed, as
    /// [`all_tools`](Self::all_tools) does, without copying any tool list.
    pub async fn settle(&self) {
        let waits = (0..self.shared.servers.len()).map(|index| async move {
            let _ = self.connection(index).await;
        });
        futures::future::join_all(waits).await;
    }

    /// Waits (bounded by the startup timeout) until that one server is ready or failed, without
    /// copying its tool list; an unknown server is settled already.
    pub async fn settle_server(&self, server: &str) {
        if let Ok(index) = self.index_of(server) {
            let _ = self.connection(index).await;
        }
    }

    /// Waits (bounded by the startup timeout) for that one server; its tool list, or why not
    /// (unknown server, failed to start, remote, timed out starting).
    pub async fn tools(&self, server: &str) -> Result<Vec<ToolDefinition>> {
        let index = self.index_of(server)?;
        let connection = self.connection(index).await?;
        Ok(connection.tools.as_ref().clone())
    }

    /// A snapshot of every server's state now, in config order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.shared
            .servers
            .iter()
            .map(|server| {
                let slot = server.lock();
                let (state, process_id, instructions) = match &slot.state {
                    State::Starting => (ServerState::Starting, None, None),
                    State::Ready {
                        tools,
                        process_id,
                        instructions,
                        ..
                    } => (
                        ServerState::Ready {
                            tool_count: tools.len(),
                        },
                        *process_id,
                        instructions.as_deref().map(str::to_owned),
                    ),
                    State::Down { error, at } => (
                        ServerState::Failed {
                            error: error.clone(),
                            restarts_on_use: !self.shared.shutdown.is_cancelled(),
                            failures: slot.failures,
                            next_try_in: (!self.shared.shutdown.is_cancelled())
                                .then(|| restart_delay(slot.failures).saturating_sub(at.elapsed())),
                        },
                        None,
                        None,
                    ),
                    State::Stopped => (ServerState::Stopped, None, None),
                };
                ServerStatus {
                    name: server.config.name.clone(),
                    transport: server.config.transport.kind(),
                    state,
                    starts: slot.starts,
                    process_id,
                    instructions,
                }
            })
            .collect()
    }

    /// Calls one tool. `timeout` overrides the default per-call timeout. When `cancel` fires the
    /// call is abandoned (rmcp sends `notifications/cancelled` upstream) and the answer is
    /// [`Error::Cancelled`]. Waits (bounded) for the server to finish starting first.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        timeout: Option<Duration>,
        cancel: CancellationToken,
    ) -> Result<CallToolResult> {
        let options = CallOptions {
            timeout,
            cancel,
            ..CallOptions::default()
        };
        self.call_tool_with(server, tool, arguments, options).await
    }

    /// [`call_tool`](Self::call_tool), made as `options` say.
    pub async fn call_tool_with(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        options: CallOptions<'_>,
    ) -> Result<CallToolResult> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let unsupported = |answer: &'static str| Error::Unsupported {
            server: server.to_owned(),
            tool: tool.to_owned(),
            answer,
        };
        match self.send(server, tool, request, None, options).await? {
            ServerResult::CallToolResult(result) => Ok(self.with_denial_note(server, result)),
            // `{}`: a result with no content.
            ServerResult::EmptyResult(_) => Ok(CallToolResult::success(Vec::new())),
            ServerResult::InputRequiredResult(_) => {
                Err(unsupported("a request for more input (input_required)"))
            }
            ServerResult::CreateTaskResult(_) => Err(unsupported("a long-running task (task)")),
            _ => Err(unsupported("a kind of answer it does not know")),
        }
    }

    /// Sends `request`, an MCP request other than a tool call (`resources/read`, `prompts/get`,
    /// ...), to server `server`, made as `options` say, with the server's timeout. `capability`
    /// names what the server must have declared in its `initialize` answer for the request to
    /// be sent (`resources`, `prompts`); a server without it gets [`Error::NotOffered`]. The
    /// answer is the server's, whatever kind it is; errors name the request by `method`.
    pub async fn request(
        &self,
        server: &str,
        method: &str,
        request: ClientRequest,
        capability: Capability,
        options: CallOptions<'_>,
    ) -> Result<ServerResult> {
        self.send(server, method, request, Some(capability), options)
            .await
    }

    /// Sends one request (`label` names it in errors: the tool, or the method) once the server
    /// is up, and waits for its answer within the call's timeout.
    async fn send(
        &self,
        server: &str,
        label: &str,
        request: ClientRequest,
        capability: Option<Capability>,
        options: CallOptions<'_>,
    ) -> Result<ServerResult> {
        let tool = label;
        let CallOptions {
            timeout,
            cancel,
            listener,
            taken,
        } = options;
        let index = self.index_of(server)?;
        let asked = Instant::now();
        let connection = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(Error::Cancelled),
            connection = self.connection(index) => connection?,
        };
        if let Some(capability) = capability {
            let info = connection.peer.peer_info();
            let capabilities = info.as_ref().map(|info| &info.capabilities);
            let offered = match capability {
                Capability::Resources => capabilities.is_some_and(|c| c.resources.is_some()),
                Capability::Prompts => capabilities.is_some_and(|c| c.prompts.is_some()),
            };
            if !offered {
                return Err(Error::NotOffered {
                    server: server.to_owned(),
                    what: capability.name(),
                });
            }
        }
        // Waiting for the server to start has a bound of its own: it counts neither against the
        // timeout nor as time in toolweave.
        let taken = taken.unwrap_or(asked) + asked.elapsed();
        let (limit, limit_from) = match timeout {
            Some(limit) => (limit, LimitFrom::Caller),
            None => self.shared.call_timeout(index, tool),
        };
        let routes = match (listener, self.shared.servers.get(index)) {
            (Some(listener), Some(server)) => Some((&server.routes, listener)),
            _ => None,
        };
        // Losing either race drops the request future, which tells the server the request was
        // cancelled, so it can stop working on an answer nobody reads.
        //
        // The end of the life is raced as well. rmcp answers a request it still holds when its
        // connection ends, but one sent in the instant the connection ends can be left in the
        // channel to the closed connection, answered by nothing: without this branch the call
        // would wait for its whole timeout. Once the life is over no answer can come, and an answer
        // that came first is taken first.
        let mut request_id = None;
        // The upstream request, as a span of the trace its execution is part of.
        let method = request.method().to_owned();
        let span = tracing::trace_span!(target: crate::SPAN_TARGET, "upstream request", otel.name = method, otel.kind = "client", otel.status_code = tracing::field::Empty, server, tool);
        let mut request = request;
        carry_trace(
            &mut request,
            &span,
            routes.as_ref().map(|(_, listener)| *listener),
        );
        let sent = tracing::Instrument::instrument(
            tokio::time::timeout_at(
                taken + limit,
                send_call(&connection.peer, request, tool, routes, &mut request_id),
            ),
            span.clone(),
        );
        let answer = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(Error::Cancelled),
            answer = sent => answer,
            () = self.life_over(index, connection.life) => Ok(Err(ServiceError::TransportClosed)),
        };
        if !matches!(answer, Ok(Ok(_))) {
            span.record("otel.status_code", "ERROR");
        }
        match answer {
            Err(_elapsed) => Err(Error::CallTimeout {
                server: server.to_owned(),
                tool: tool.to_owned(),
                limit,
                limit_from,
                delivery: connection
                    .wire
                    .delivery(request_id.as_ref(), taken, Instant::now()),
            }),
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(self
                .call_failure(index, tool, &connection, request_id.as_ref(), error)
                .await),
        }
    }

    /// A client session connected, declaring `capabilities` in its `initialize`, or (`None`) on
    /// each request as MCP 2026-07-28 clients do: upstream servers' requests may go to it (see
    /// [`ClientSession`]), and over stdio, servers start once the one client has connected. The
    /// session stays known until the returned connection is dropped.
    pub fn client_connected(
        &self,
        session: Arc<dyn ClientSession>,
        capabilities: Option<&rmcp::model::ClientCapabilities>,
    ) -> ClientConnection {
        let number = session.session();
        self.shared.clients.connect(session, capabilities);
        ClientConnection::new(self.shared.clients.clone(), number)
    }

    /// A client speaking MCP 2026-07-28 asked `server/discover`: over stdio, upstream servers start
    /// now, told toolweave supports elicitation, sampling and roots (each request of the client is
    /// checked against what it declares), instead of waiting for an `initialize` it never sends.
    pub fn client_declares_per_request(&self) {
        self.shared.clients.expect_per_request();
    }

    /// A client said its roots changed (`notifications/roots/list_changed`): every ready server
    /// is told, when servers were told toolweave has roots.
    pub async fn roots_changed(&self) {
        if !self.shared.clients.has_roots() {
            return;
        }
        let peers: Vec<(String, Peer<RoleClient>)> = self
            .shared
            .servers
            .iter()
            .filter_map(|server| match &server.lock().state {
                State::Ready { peer, .. } => Some((server.config.name.clone(), peer.clone())),
                _ => None,
            })
            .collect();
        let notices = peers.iter().map(|(name, peer)| async move {
            if let Err(error) = peer.notify_roots_list_changed().await {
                tracing::debug!(server = %name, %error, "could not pass notifications/roots/list_changed on");
            }
        });
        futures::future::join_all(notices).await;
    }

    /// Stops every child process (graceful close, then kill) and waits briefly. Nothing is left
    /// running afterwards, and servers are not restarted.
    pub async fn shutdown(&self) {
        self.shared.shutdown.cancel();
        self.shared.tasks.close();
        if tokio::time::timeout(SHUTDOWN_LIMIT, self.shared.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                "upstream servers did not stop within {} ms; their processes are killed as the runtime ends",
                SHUTDOWN_LIMIT.as_millis()
            );
        }
    }

    /// `result`, with a note naming the entry key to change added to it when its server is boxed
    /// and its error looks like the box's doing (see `boxing::denial_note`).
    fn with_denial_note(&self, server: &str, mut result: CallToolResult) -> CallToolResult {
        if result.is_error != Some(true) {
            return result;
        }
        let Some(config) = self
            .index_of(server)
            .ok()
            .map(|index| &self.shared.servers[index].config)
        else {
            return result;
        };
        let Transport::Stdio {
            sandbox: Some(sandbox),
            env,
            ..
        } = &config.transport
        else {
            return result;
        };
        let text: String = result
            .content
            .iter()
            .filter_map(|content| content.as_text().map(|text| text.text.as_str()))
            .collect::<Vec<_>>()
            .join("\n");
        if let Some(note) = crate::boxing::denial_note(&config.name, sandbox, env, &text) {
            // First: a long error is cut at its end before the model reads it.
            result
                .content
                .insert(0, rmcp::model::ContentBlock::text(note));
        }
        result
    }

    fn index_of(&self, server: &str) -> Result<usize> {
        self.shared
            .servers
            .iter()
            .position(|candidate| candidate.config.name == server)
            .ok_or_else(|| Error::UnknownServer {
                server: server.to_owned(),
                configured: if self.shared.servers.is_empty() {
                    "none".to_owned()
                } else {
                    self.server_names().join(", ")
                },
            })
    }

    /// Waits until the server is ready (restarting it if it is due) or has failed. Bounded: the
    /// server's task records a failure at the startup timeout; the grace covers its cleanup.
    async fn connection(&self, index: usize) -> Result<Connection> {
        let mut changes = self.shared.version.subscribe();
        let deadline = Instant::now() + self.shared.options.startup_timeout + SETTLE_GRACE;
        loop {
            // Marked seen before looking, so a change after the look wakes the wait below.
            changes.borrow_and_update();
            if let Some(settled) = self.shared.settled(index) {
                return settled;
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                // The sender lives as long as `shared`, which outlives this borrow.
                Ok(Err(_closed)) => return Err(self.shared.stopped(index)),
                Err(_elapsed) => {
                    return Err(Error::StartTimeout {
                        server: self.shared.name(index),
                        limit: self.shared.options.startup_timeout,
                        stderr: String::new(),
                    });
                }
            }
        }
    }

    /// Returns once life `life` of server `index` has ended (its end recorded, or another life
    /// started).
    async fn life_over(&self, index: usize, life: u32) {
        let mut changes = self.shared.version.subscribe();
        loop {
            // Marked seen before looking, so a change after the look wakes the wait below.
            changes.borrow_and_update();
            if self.shared.life_is_over(index, life) {
                return;
            }
            if changes.changed().await.is_err() {
                // The sender lives as long as `shared`: this is not reached while `self` lives.
                return std::future::pending().await;
            }
        }
    }

    /// Turns a failed request into the error a caller reads. A lost connection is explained by
    /// the server's exit, which its task records a moment later. A remote server's broken
    /// connection shows only here: the call ends the life, and a later call connects again.
    async fn call_failure(
        &self,
        index: usize,
        tool: &str,
        connection: &Connection,
        request_id: Option<&RequestId>,
        error: ServiceError,
    ) -> Error {
        let server = self.shared.name(index);
        let life = connection.life;
        if let Some(malformed) = request_id.and_then(|id| connection.wire.take_unreadable(id)) {
            return Error::UnreadableAnswer {
                server,
                tool: tool.to_owned(),
                malformed,
            };
        }
        if self.shared.is_remote(index)
            && let Some(failure) = crate::remote::describe_service_error(&error)
        {
            if failure.login {
                return Error::LoginNeeded {
                    server,
                    cause: failure.cause,
                };
            }
            if !failure.connection {
                return Error::CallFailed {
                    server,
                    tool: tool.to_owned(),
                    message: failure.cause,
                };
            }
            connection.breaker.trip(failure.cause);
        }
        match error {
            ServiceError::McpError(data) => Error::Rejected {
                server,
                tool: tool.to_owned(),
                code: data.code.0,
                message: data.message.into_owned(),
            },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let mut changes = self.shared.version.subscribe();
                let deadline = Instant::now() + EXIT_REPORT_WAIT;
                loop {
                    changes.borrow_and_update();
                    if let Some(error) = self.shared.exit_of(index, life, tool) {
                        return error;
                    }
                    if !matches!(
                        tokio::time::timeout_at(deadline, changes.changed()).await,
                        Ok(Ok(()))
                    ) {
                        return Error::CallFailed {
                            server,
                            tool: tool.to_owned(),
                            message: "the connection to the server was lost".to_owned(),
                        };
                    }
                }
            }
            other => Error::CallFailed {
                server,
                tool: tool.to_owned(),
                message: other.to_string(),
            },
        }
    }
}

impl Drop for UpstreamManager {
    fn drop(&mut self) {
        // Without a shutdown call, the tasks still stop (and kill) their children.
        self.shared.shutdown.cancel();
    }
}

impl Server {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        // A poisoned lock only means a panic elsewhere; the state itself is always whole.
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Shared {
    fn name(&self, index: usize) -> String {
        self.servers
            .get(index)
            .map(|server| server.config.name.clone())
            .unwrap_or_default()
    }

    fn stopped(&self, index: usize) -> Error {
        Error::Stopped {
            server: self.name(index),
        }
    }

    fn bump(&self) {
        self.version.send_modify(|version| *version += 1);
    }

    /// The time one call to `tool` of server `index` may take, and what set it: the tool's
    /// entry in the server's `toolTimeouts`, else the server's `timeout`, else
    /// `--tool-timeout-ms`.
    fn call_timeout(&self, index: usize, tool: &str) -> (Duration, LimitFrom) {
        let Some(server) = self.servers.get(index) else {
            return (self.options.call_timeout, LimitFrom::Flag);
        };
        let resolved = server.lock().tool_timeouts.get(tool).copied();
        if let Some(limit) = resolved.or_else(|| server.config.tool_timeouts.get(tool).copied()) {
            return (limit, LimitFrom::ToolConfig);
        }
        match server.config.tool_timeout {
            Some(limit) => (limit, LimitFrom::ServerConfig),
            None => (self.options.call_timeout, LimitFrom::Flag),
        }
    }

    /// Whether the server is reached over HTTP.
    fn is_remote(&self, index: usize) -> bool {
        self.servers
            .get(index)
            .is_some_and(|server| !matches!(server.config.transport, Transport::Stdio { .. }))
    }

    /// Starts a life of the server (spawn, or connect) in the background. The caller holds the
    /// slot.
    fn launch(self: &Arc<Self>, index: usize, slot: &mut Slot) {
        slot.state = State::Starting;
        slot.starts += 1;
        let Some(server) = self.servers.get(index) else {
            return;
        };
        let launch = Launch {
            config: server.config.clone(),
            tools_changed: server.tools_changed.clone(),
            routes: server.routes.clone(),
            clients: self.clients.clone(),
            logins: self.logins.clone(),
            options: self.options,
            shutdown: self.shutdown.clone(),
        };
        let slot_of_life = LifeSlot {
            shared: self.clone(),
            index,
            life: slot.starts,
        };
        self.tasks
            .spawn(crate::life::supervise(launch, slot_of_life));
    }

    /// The connection if ready, the reason if down (restarting the server instead when it is
    /// due), nothing while it starts.
    fn settled(self: &Arc<Self>, index: usize) -> Option<Result<Connection>> {
        let server = self.servers.get(index)?;
        let mut slot = server.lock();
        let restart = match &slot.state {
            State::Starting => return None,
            State::Stopped => return Some(Err(self.stopped(index))),
            State::Ready {
                peer,
                tools,
                breaker,
                wire,
                ..
            } => {
                return Some(Ok(Connection {
                    peer: peer.clone(),
                    tools: tools.clone(),
                    life: slot.starts,
                    breaker: breaker.clone(),
                    wire: wire.clone(),
                }));
            }
            State::Down { error, at } => {
                if self.shutdown.is_cancelled() {
                    return Some(Err(self.stopped(index)));
                }
                if at.elapsed() < restart_delay(slot.failures) {
                    return Some(Err(error.clone()));
                }
                tracing::info!(server = %server.config.name, failures = slot.failures, "starting the server again");
                true
            }
        };
        if restart {
            self.launch(index, &mut slot);
            drop(slot);
            self.bump();
        }
        None
    }

    /// Whether life `life` of server `index` has ended: another life started, or its end is recorded.
    fn life_is_over(&self, index: usize, life: u32) -> bool {
        let Some(server) = self.servers.get(index) else {
            return true;
        };
        let slot = server.lock();
        slot.starts != life || !matches!(slot.state, State::Starting | State::Ready { .. })
    }

    /// Why life `life` of the server ended, once its task has recorded it (for a call to `tool`
    /// that lost its connection).
    fn exit_of(&self, index: usize, life: u32, tool: &str) -> Option<Error> {
        let server = self.servers.get(index)?;
        let slot = server.lock();
        if slot.starts != life {
            return Some(Error::CallFailed {
                server: server.config.name.clone(),
                tool: tool.to_owned(),
                message: "the connection to the server was lost; it has been started again"
                    .to_owned(),
            });
        }
        match &slot.state {
            State::Starting | State::Ready { .. } => None,
            State::Stopped => Some(self.stopped(index)),
            State::Down { error, .. } => Some(match error.clone() {
                Error::Exited {
                    server,
                    status,
                    stderr,
                    ..
                } => Error::Exited {
                    server,
                    status,
                    stderr,
                    during_call: true,
                },
                other => other,
            }),
        }
    }

    /// Records that life `life` finished starting. Ignored if that life is no longer current.
    fn set_ready(&self, index: usize, life: u32, ready: Ready) {
        let Some(server) = self.servers.get(index) else {
            return;
        };
        let mut slot = server.lock();
        if slot.starts != life {
            return;
        }
        slot.tool_timeouts = tool_timeouts(
            &server.config.name,
            &server.config.tool_timeouts,
            &ready.tools,
        );
        slot.state = State::Ready {
            peer: ready.peer,
            tools: Arc::new(listed(&server.config.name, ready.tools)),
            process_id: ready.process_id,
            breaker: ready.breaker,
            wire: ready.wire,
            instructions: ready.instructions.map(Arc::from),
        };
        drop(slot);
        self.bump();
    }

    /// Replaces the tool list of life `life` after the server announced a change.
    fn set_tools(&self, index: usize, life: u32, new_tools: Vec<Tool>) {
        let Some(server) = self.servers.get(index) else {
            return;
        };
        let mut slot = server.lock();
        if slot.starts != life {
            return;
        }
        if let State::Ready { tools, .. } = &mut slot.state {
            *tools = Arc::new(listed(&server.config.name, new_tools));
            drop(slot);
            self.bump();
        }
    }

    /// Records how life `life` ended.
    fn finish(&self, index: usize, life: u32, ending: Ending) {
        let Some(server) = self.servers.get(index) else {
            return;
        };
        let mut slot = server.lock();
        if slot.starts != life {
            return;
        }
        slot.state = match ending {
            Ending::Stopped => State::Stopped,
            Ending::Failed { error, uptime } => {
                // A server that never came up is tried again like one that crashed: a remote
                // server may come up after toolweave did, and one that wanted a login may find
                // that the person has logged in since.
                slot.failures = match uptime {
                    Some(uptime) if uptime >= STABLE_UPTIME => 1,
                    _ => slot.failures.saturating_add(1),
                };
                State::Down {
                    error,
                    at: Instant::now(),
                }
            }
        };
        drop(slot);
        self.bump();
    }
}

/// A server's tool list as the catalog reads it: schemas as shared compact text, so the parsed
/// trees rmcp made are freed (at thousands of tools they are most of the gateway's memory).
fn listed(server: &str, tools: Vec<Tool>) -> Vec<ToolDefinition> {
    let mut listed: Vec<ToolDefinition> = tools
        .into_iter()
        .filter_map(|tool| {
            let name = tool.name.clone();
            definition(server, tool)
                .inspect_err(|error| {
                    // Messages nest less deeply than that (`decode` drops such a tool with its
                    // reason), so this is a second line of defence only.
                    tracing::warn!(server, tool = %name, "the tool is left out: {error}");
                })
                .ok()
        })
        .collect();
    // Collected in the place rmcp's list took, which the list's growth had made larger than
    // it needed (by how much: docs/benchmarks.md, "Figures behind choices in the code").
    listed.shrink_to_fit();
    listed
}

/// The MCP tool definition `tool`, of the provider `server`, as the catalog keeps it; an error
/// when one of its schemas nests more deeply than the catalog keeps.
pub fn definition(server: &str, tool: Tool) -> std::result::Result<ToolDefinition, SchemaTooDeep> {
    let input_schema = ToolSchema::from_object(&tool.input_schema)?;
    let output_schema = tool
        .output_schema
        .as_deref()
        .map(ToolSchema::from_object)
        .transpose()?;
    let app_only = ToolDefinition::app_only_meta(tool.meta.as_ref().map(|meta| &meta.0));
    Ok(ToolDefinition {
        server: server.to_owned(),
        name: tool.name.into_owned(),
        title: tool.title,
        description: tool.description.map(|text| text.into_owned()),
        input_schema,
        output_schema,
        annotations: tool.annotations.map(|hints| Annotations {
            title: hints.title,
            read_only: hints.read_only_hint,
            destructive: hints.destructive_hint,
            idempotent: hints.idempotent_hint,
            open_world: hints.open_world_hint,
        }),
        app_only,
    })
}

/// Sends `tools/call` and waits for the answer; the request's id goes to `request_id` as soon as
/// it has one. With `routes`, the call's progress token is registered for `listener` as soon as
/// the request is queued: the answer, and any progress before it, arrive later. Dropping the
/// future before the answer tells the server the request was cancelled.
/// Puts trace context in `request`'s `_meta`: that of `span` (the request's) when spans are
/// exported, else the caller's, when `listener`'s caller sent one.
fn carry_trace(request: &mut ClientRequest, span: &tracing::Span, listener: Option<&Listener>) {
    let Some(trace) = request_trace(span).or_else(|| listener.and_then(|l| l.trace().cloned()))
    else {
        return;
    };
    let meta = request.get_meta_mut();
    meta.set_traceparent(trace.traceparent);
    if let Some(tracestate) = trace.tracestate {
        meta.set_tracestate(tracestate);
    }
}

/// The trace context an upstream request carries when toolweave's spans are exported: its own
/// span's, in the caller's trace when the caller sent one. `None` when spans are not exported;
/// then the caller's context is passed on as it came.
fn request_trace(span: &tracing::Span) -> Option<TraceContext> {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    if span.is_disabled() {
        return None;
    }
    let context = span.context();
    let span_context = context.span().span_context().clone();
    if !span_context.is_valid() {
        return None;
    }
    let tracestate = span_context.trace_state().header();
    Some(TraceContext {
        traceparent: format!(
            "00-{}-{}-{:02x}",
            span_context.trace_id(),
            span_context.span_id(),
            span_context.trace_flags().to_u8()
        ),
        tracestate: (!tracestate.is_empty()).then_some(tracestate),
    })
}

async fn send_call(
    peer: &Peer<RoleClient>,
    request: ClientRequest,
    tool: &str,
    routes: Option<(&Arc<Routes>, &Listener)>,
    request_id: &mut Option<RequestId>,
) -> std::result::Result<ServerResult, ServiceError> {
    let handle = peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await?;
    *request_id = Some(handle.id.clone());
    // Held until the call ends, however it ends; dropping it ends the call's routes.
    let _registration = routes
        .map(|(routes, listener)| routes.register(listener, tool, handle.progress_token.clone()));
    let mut abandoned = CancelOnDrop {
        peer,
        id: Some(handle.id.clone()),
    };
    let answer = handle.await_response().await;
    abandoned.id = None;
    answer
}

/// What a server declares it offers, besides tools, that a request may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    /// `resources/list`, `resources/read`, `resources/templates/list`.
    Resources,
    /// `prompts/list`, `prompts/get`.
    Prompts,
}

impl Capability {
    /// Its name in an `initialize` answer.
    pub fn name(self) -> &'static str {
        match self {
            Self::Resources => "resources",
            Self::Prompts => "prompts",
        }
    }
}

/// Tells the server a request was cancelled, unless disarmed (`id` taken) first.
struct CancelOnDrop<'a> {
    peer: &'a Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let peer = self.peer.clone();
        let notice = CancelledNotificationParam::new(
            Some(id),
            Some("the call was abandoned (cancelled or timed out)".to_owned()),
        );
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.notify_cancelled(notice).await;
            });
        }
    }
}

/// Delay before the start that follows `failures` failures in a row (1, 2, 4, ... seconds, at
/// most 30).
fn restart_delay(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    FIRST_RESTART_DELAY
        .saturating_mul(1 << doublings)
        .min(MAX_RESTART_DELAY)
}

/// A server's `toolTimeouts` keyed by the names of the tools in `listed` they name: each key the
/// tool's name as the server lists it, or its name in code (guest names, assigned over the
/// whole list as the catalog assigns them). A key that names no listed tool is logged.
fn tool_timeouts(
    server: &str,
    configured: &BTreeMap<String, Duration>,
    listed: &[rmcp::model::Tool],
) -> BTreeMap<String, Duration> {
    let guest_names =
        toolweave_catalog::names::assign_unique(listed.iter().map(|tool| tool.name.as_ref()), &[]);
    let mut resolved = BTreeMap::new();
    for (key, limit) in configured {
        let tool = listed
            .iter()
            .find(|tool| tool.name == key.as_str())
            .map(|tool| tool.name.as_ref())
            .or_else(|| {
                guest_names
                    .iter()
                    .find(|(_, guest)| *guest == key)
                    .map(|(tool, _)| tool.as_str())
            });
        match tool {
            Some(tool) => {
                resolved.entry(tool.to_owned()).or_insert(*limit);
            }
            None => {
                tracing::warn!(server = %server, tool = %key, "\"toolTimeouts\" names the tool {key:?}, which the server does not list; its entry has no effect (name the tool as the server lists it or as code calls it)");
            }
        }
    }
    resolved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_delay_doubles_up_to_a_cap() {
        assert_eq!(restart_delay(0), Duration::from_secs(1));
        assert_eq!(restart_delay(1), Duration::from_secs(1));
        assert_eq!(restart_delay(2), Duration::from_secs(2));
        assert_eq!(restart_delay(4), Duration::from_secs(8));
        assert_eq!(restart_delay(40), MAX_RESTART_DELAY);
    }
}
