//! One life of one server, whatever its transport: connect (spawn the process, or open the HTTP
//! connection), complete the MCP handshake and `tools/list` under the startup timeout, serve until
//! the process exits, the connection closes or breaks, or toolweave shuts down, then report how it
//! ended. The task owns what it connected, so it is the one place that stops it. Over stdio, a
//! life starts once the one client has said what it supports, which the handshake passes on.
//!
//! A life knows its server's entry and what it shares with the rest of toolweave ([`Launch`]), and
//! tells what became of the server to a [`LifeEvents`] (the manager's state of that server): it knows
//! nothing of the manager itself.

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::Tool;
use rmcp::service::{Peer, RunningService};
use rmcp::{ClientServiceExt, ServiceExt};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use toolweave_config::{Expanded, ServerConfig, Transport};

use crate::auth::{Authorization, Logins};
use crate::breaker::Breaker;
use crate::client::UpstreamClient;
use crate::decode::Method;
use crate::handshake::{Handshake, StartFailure, lifecycle, list_tools};
use crate::notices::Routes;
use crate::process::Process;
use crate::remote::describe_initialize_error;
use crate::requests::Clients;
use crate::sse::{ClosedReason, SseTransport};
use crate::streamable::streamable_http_transport;
use crate::wire::Wire;
use crate::{Error, Options};

/// How long a server may take to go by itself once its connection is closed, before it is
/// stopped (a process is killed then).
const EXIT_GRACE: Duration = Duration::from_secs(1);

/// What a life is given: its server's entry, and what it shares with the rest of toolweave.
pub(crate) struct Launch {
    /// The server's entry in the config.
    pub(crate) config: Arc<ServerConfig>,
    /// Woken by the client handler on `notifications/tools/list_changed`.
    pub(crate) tools_changed: Arc<Notify>,
    /// Where its progress and log notifications for calls in flight go.
    pub(crate) routes: Arc<Routes>,
    /// The client sessions toolweave serves: what the server is told toolweave supports, and
    /// where its requests go.
    pub(crate) clients: Arc<Clients>,
    /// Where remote servers' logins are kept (`None`: nowhere, so none is used).
    pub(crate) logins: Option<Logins>,
    /// The startup and call timeouts.
    pub(crate) options: Options,
    /// Cancelled when toolweave shuts down: the life stops what it connected.
    pub(crate) shutdown: CancellationToken,
}

/// Where a life tells what became of its server: the manager's state of the server, for this life
/// only (what a life that is no longer the current one reports is ignored there).
pub(crate) trait LifeEvents: Send + Sync + 'static {
    /// The server finished starting.
    fn ready(&self, ready: Ready);
    /// The server listed its tools again after it said they changed.
    fn tools_listed(&self, tools: Vec<Tool>);
    /// The life ended.
    fn ended(&self, ending: Ending);
}

/// How a life ended.
pub(crate) enum Ending {
    /// Shutdown stopped it.
    Stopped,
    /// It failed to start, or exited after it was ready (`uptime` then says for how long).
    Failed {
        error: Error,
        uptime: Option<Duration>,
    },
}

/// What a life that finished starting hands the manager.
pub(crate) struct Ready {
    /// Where requests go.
    pub(crate) peer: Peer<RoleClient>,
    /// Its tools.
    pub(crate) tools: Vec<Tool>,
    /// Its process, for a stdio server.
    pub(crate) process_id: Option<u32>,
    /// Ends the life when a call finds the connection broken.
    pub(crate) breaker: Breaker,
    /// What crosses the connection.
    pub(crate) wire: Arc<Wire>,
    /// What the server's `initialize` said about using it, bounded.
    pub(crate) instructions: Option<String>,
}

/// What a life is connected through.
pub(crate) enum Link {
    /// A child process on stdin/stdout.
    Process(Process),
    /// An HTTP server.
    Remote(Remote),
}

/// A remote server, as messages name it.
pub(crate) struct Remote {
    server: String,
    transport: &'static str,
    /// As written in the config file (variables unresolved).
    url: String,
    /// Why an SSE server's event stream ended.
    closed: Option<ClosedReason>,
}

impl Remote {
    fn unreachable(&self, cause: String) -> Error {
        Error::Unreachable {
            server: self.server.clone(),
            transport: self.transport,
            url: self.url.clone(),
            cause,
        }
    }

    fn disconnected(&self, cause: String) -> Error {
        Error::Disconnected {
            server: self.server.clone(),
            cause,
            during_call: false,
        }
    }
}

impl Link {
    /// Resolves when the server went away by itself (a process exited); never for a remote one,
    /// whose end shows as a closed connection.
    async fn gone(&mut self) -> String {
        match self {
            Link::Process(process) => process.wait().await,
            Link::Remote(_) => std::future::pending().await,
        }
    }

    fn process_id(&self) -> Option<u32> {
        match self {
            Link::Process(process) => process.id(),
            Link::Remote(_) => None,
        }
    }

    /// Stops what is left after the connection closed: a process gets `grace` to exit.
    async fn stop(&mut self, grace: Duration) {
        if let Link::Process(process) = self
            && process.end(grace).await.is_none()
        {
            tracing::debug!("killed the server's process");
        }
    }

    /// The handshake failed.
    async fn start_failed(&mut self, name: String, failure: StartFailure) -> Error {
        match self {
            Link::Process(process) => {
                let error = process.start_failed(name, failure).await;
                process.explain_start(error)
            }
            Link::Remote(_) if failure.needs_login => Error::LoginNeeded {
                server: name,
                cause: failure.message,
            },
            Link::Remote(remote) => remote.unreachable(failure.message),
        }
    }

    /// The process exited during startup.
    async fn exited_during_startup(&mut self, name: String, status: String) -> Error {
        match self {
            Link::Process(process) => {
                let error = Error::ExitedDuringStartup {
                    server: name,
                    status,
                    stderr: process.stderr().await,
                };
                process.explain_start(error)
            }
            Link::Remote(remote) => remote.unreachable(status),
        }
    }

    /// Startup took longer than `limit`.
    async fn timed_out(&mut self, name: String, limit: Duration) -> Error {
        self.stop(Duration::ZERO).await;
        match self {
            Link::Process(process) => {
                let error = Error::StartTimeout {
                    server: name,
                    limit,
                    stderr: process.stderr().await,
                };
                process.explain_start(error)
            }
            Link::Remote(_) => Error::StartTimeout {
                server: name,
                limit,
                stderr: String::new(),
            },
        }
    }

    /// The process exited after it was ready.
    async fn exited(&mut self, name: String, status: String) -> Error {
        match self {
            Link::Process(process) => Error::Exited {
                server: name,
                status,
                stderr: process.stderr().await,
                during_call: false,
            },
            Link::Remote(remote) => remote.disconnected(status),
        }
    }

    /// The MCP connection closed after the server was ready.
    async fn closed(&mut self, name: String) -> Error {
        match self {
            Link::Process(process) => process.closed(name, EXIT_GRACE).await,
            Link::Remote(remote) => {
                let cause = remote
                    .closed
                    .as_ref()
                    .and_then(ClosedReason::get)
                    .map_or_else(
                        || "the connection closed".to_owned(),
                        |failure| failure.cause,
                    );
                remote.disconnected(cause)
            }
        }
    }

    /// A call found the connection broken.
    fn broken(&self, name: String, cause: String) -> Error {
        match self {
            Link::Process(_) => Error::Exited {
                server: name,
                status: cause,
                stderr: String::new(),
                during_call: false,
            },
            Link::Remote(remote) => remote.disconnected(cause),
        }
    }
}

/// Connects a remote server: the link, and the handshake to run under the startup timeout. Its
/// requests carry the login kept in `logins` unless its entry sends its own credentials.
fn connect_remote(
    name: &str,
    transport: &Transport,
    client: UpstreamClient,
    wire: Arc<Wire>,
    logins: Option<&Logins>,
) -> Option<(Link, Handshake)> {
    let (url, headers, closed) = match transport {
        Transport::Stdio { .. } => return None,
        Transport::Http { url, headers, .. } => (url, headers, None),
        Transport::Sse { url, headers, .. } => (url, headers, Some(ClosedReason::default())),
    };
    let authorization = Authorization::for_transport(transport, logins);
    let remote = Remote {
        server: name.to_owned(),
        transport: transport.kind(),
        url: url.as_written().to_owned(),
        closed: closed.clone(),
    };
    let handshake: Handshake = match closed {
        None => {
            let transport =
                streamable_http_transport(url, headers, wire.clone(), authorization.clone());
            let (url, headers) = (url.clone(), headers.clone());
            Box::pin(async move {
                let transport = transport.map_err(StartFailure::remote)?;
                let service = match client
                    .clone()
                    .serve_with_lifecycle(transport, lifecycle())
                    .await
                {
                    Ok(service) => service,
                    // A server that answers `server/discover` with a result that is not its
                    // answer (an empty one: a server that answers every method it does not
                    // know) speaks `initialize`, and is asked with it on a new connection.
                    Err(rmcp::service::ClientInitializeError::ExpectedInitResult(answer)) => {
                        tracing::debug!(
                            ?answer,
                            "the server answered server/discover with another result; asking it with initialize"
                        );
                        let transport =
                            streamable_http_transport(&url, &headers, wire.clone(), authorization)
                                .map_err(StartFailure::remote)?;
                        client
                            .serve_with_lifecycle(transport, rmcp::ClientLifecycleMode::Initialize)
                            .await
                            .map_err(|error| remote_start_failure(&error, &wire))?
                    }
                    Err(error) => return Err(remote_start_failure(&error, &wire)),
                };
                list_tools(service, &wire).await
            })
        }
        Some(closed) => {
            let url: Expanded = url.clone();
            let headers = headers.clone();
            Box::pin(async move {
                let transport =
                    SseTransport::connect(&url, &headers, closed, wire.clone(), authorization)
                        .await
                        .map_err(StartFailure::remote)?;
                let service = client
                    .serve(transport)
                    .await
                    .map_err(|error| remote_start_failure(&error, &wire))?;
                list_tools(service, &wire).await
            })
        }
    };
    Some((Link::Remote(remote), handshake))
}

/// Why `initialize` failed on a remote server.
fn remote_start_failure(error: &rmcp::service::ClientInitializeError, wire: &Wire) -> StartFailure {
    match wire.take_unreadable_answer_to(Method::Initialize) {
        Some(malformed) => StartFailure::protocol(format!(
            "its answer to initialize cannot be read: {malformed}"
        )),
        None => StartFailure::remote(describe_initialize_error(error)),
    }
}

/// Runs the server `launch` names to the end of this life, telling `events` what became of it.
pub(crate) async fn supervise(launch: Launch, events: impl LifeEvents) {
    let ending = live(&launch, &events).await;
    if let Ending::Failed { error, .. } = &ending {
        tracing::warn!(server = %launch.config.name, "{error}");
    }
    events.ended(ending);
}

enum Start {
    Ready(RunningService<RoleClient, UpstreamClient>, Vec<Tool>),
    Failed(StartFailure),
    TimedOut,
    Exited(String),
    Shutdown,
}

enum Served {
    Shutdown,
    Exited(String),
    ConnectionClosed,
    Broken(String),
}

/// Starts the server's transport: its process, or its connection to a remote server.
fn connect(launch: &Launch, wire: &Arc<Wire>) -> Result<(Link, Handshake), Error> {
    let name = &launch.config.name;
    let client = UpstreamClient::new(
        name.clone(),
        launch.tools_changed.clone(),
        launch.routes.clone(),
        launch.clients.clone(),
        launch.options.call_timeout,
    );
    match &launch.config.transport {
        Transport::Stdio { .. } => crate::process::spawn(&launch.config, client, wire.clone())
            .map(|(process, handshake)| (Link::Process(process), handshake)),
        remote => connect_remote(name, remote, client, wire.clone(), launch.logins.as_ref())
            .ok_or_else(|| Error::Stopped {
                server: name.clone(),
            }),
    }
}

/// Takes the server's tools again, after it said they changed.
async fn list_tools_again(launch: &Launch, events: &impl LifeEvents, peer: &Peer<RoleClient>) {
    let name = &launch.config.name;
    match tokio::time::timeout(launch.options.call_timeout, peer.list_all_tools()).await {
        Ok(Ok(tools)) => {
            tracing::info!(server = %name, tools = tools.len(), "upstream tool list changed");
            events.tools_listed(tools);
        }
        Ok(Err(error)) => {
            tracing::warn!(server = %name, %error, "listing tools again after a change failed");
        }
        Err(_elapsed) => {
            tracing::warn!(server = %name, "listing tools again after a change timed out");
        }
    }
}

/// Waits for the server's MCP handshake, within the startup timeout: its service and tools,
/// or how its life ends (shut down, or failed with why).
async fn handshake_within(
    launch: &Launch,
    link: &mut Link,
    handshake: Handshake,
    wire: &Wire,
) -> Result<(RunningService<RoleClient, UpstreamClient>, Vec<Tool>), Ending> {
    let name = &launch.config.name;
    let limit = launch.options.startup_timeout;
    let start = tokio::select! {
        biased;
        () = launch.shutdown.cancelled() => Start::Shutdown,
        status = link.gone() => Start::Exited(status),
        result = tokio::time::timeout(limit, handshake) => match result {
            Err(_elapsed) => Start::TimedOut,
            Ok(Err(failure)) => Start::Failed(failure),
            Ok(Ok((service, tools))) => Start::Ready(service, tools),
        },
    };
    match start {
        Start::Ready(service, tools) => Ok((service, tools)),
        Start::Shutdown => {
            link.stop(Duration::ZERO).await;
            Err(Ending::Stopped)
        }
        Start::Exited(status) => {
            let error = link.exited_during_startup(name.to_owned(), status).await;
            Err(failed(explain_unreadable(error, wire)))
        }
        Start::Failed(failure) => {
            let error = link.start_failed(name.to_owned(), failure).await;
            Err(failed(explain_unreadable(error, wire)))
        }
        Start::TimedOut => {
            let error = link.timed_out(name.to_owned(), limit).await;
            Err(failed(explain_unreadable(error, wire)))
        }
    }
}

/// Says in the log that the server is ready with `tools` tools, `started` that long ago.
fn log_ready(config: &ServerConfig, tools: usize, started: Instant) {
    tracing::info!(
        server = %config.name,
        transport = config.transport.kind(),
        tools,
        elapsed_ms = started.elapsed().as_millis(),
        "upstream server ready"
    );
}

async fn live(launch: &Launch, events: &impl LifeEvents) -> Ending {
    let name = launch.config.name.clone();
    // What the server is told toolweave supports is what the client declared (stdio).
    tokio::select! {
        biased;
        () = launch.shutdown.cancelled() => return Ending::Stopped,
        () = launch.clients.declared() => {}
    }
    let started = Instant::now();
    let wire = Wire::new(name.clone());
    let (mut link, handshake) = match connect(launch, &wire) {
        Ok(connected) => connected,
        Err(error) => return failed(error),
    };

    let (service, tools) = match handshake_within(launch, &mut link, handshake, &wire).await {
        Ok(ready) => ready,
        Err(ending) => return ending,
    };

    let peer = service.peer().clone();
    let instructions = service
        .peer_info()
        .and_then(|info| info.instructions.as_deref().map(bounded_instructions));
    let stop_service = service.cancellation_token();
    let breaker = Breaker::default();
    log_ready(&launch.config, tools.len(), started);
    events.ready(Ready {
        peer: peer.clone(),
        tools,
        process_id: link.process_id(),
        breaker: breaker.clone(),
        wire,
        instructions,
    });
    let ready_at = Instant::now();
    let service_done = service.waiting();
    tokio::pin!(service_done);
    let served = loop {
        tokio::select! {
            biased;
            () = launch.shutdown.cancelled() => break Served::Shutdown,
            status = link.gone() => break Served::Exited(status),
            _ = &mut service_done => break Served::ConnectionClosed,
            cause = breaker.tripped() => break Served::Broken(cause),
            () = launch.tools_changed.notified() => {
                list_tools_again(launch, events, &peer).await;
            }
        }
    };
    let uptime = Some(ready_at.elapsed());
    let error = match served {
        Served::Shutdown => {
            // Graceful first: closing the connection closes a child's stdin (MCP servers exit
            // when it ends) or a remote session. Whatever still runs after the grace is killed.
            stop_service.cancel();
            let _ = tokio::time::timeout(EXIT_GRACE, &mut service_done).await;
            link.stop(EXIT_GRACE).await;
            return Ending::Stopped;
        }
        Served::Exited(status) => {
            stop_service.cancel();
            link.exited(name, status).await
        }
        Served::ConnectionClosed => link.closed(name).await,
        Served::Broken(cause) => {
            stop_service.cancel();
            let _ = tokio::time::timeout(EXIT_GRACE, &mut service_done).await;
            link.stop(EXIT_GRACE).await;
            link.broken(name, cause)
        }
    };
    Ending::Failed { error, uptime }
}

/// `error`, a failed start, told again with the messages the server sent that toolweave could not
/// read (and could not tie to a request), when there were some: they are the likely cause.
fn explain_unreadable(error: Error, wire: &Wire) -> Error {
    let Some((count, first)) = wire.untied() else {
        return error;
    };
    match error.into_failed_start() {
        Ok((server, outcome, stderr)) => Error::UnreadableAtStart {
            server,
            outcome,
            count,
            first: Box::new(first),
            stderr,
        },
        Err(error) => error,
    }
}

/// A server's instructions, cut to [`MAX_INSTRUCTIONS_BYTES`](crate::MAX_INSTRUCTIONS_BYTES)
/// (on a character boundary) with a note that says how much was left out.
fn bounded_instructions(text: &str) -> String {
    let text = text.trim();
    let max = crate::MAX_INSTRUCTIONS_BYTES;
    if text.len() <= max {
        return text.to_owned();
    }
    format!(
        "{}\n[… cut by toolweave: the server's instructions are {} bytes; the first {max} are shown]",
        toolweave_jsonrpc::text::head(text, max),
        text.len()
    )
}

fn failed(error: Error) -> Ending {
    Ending::Failed {
        error,
        uptime: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_instructions_are_cut_with_a_note() {
        assert_eq!(
            bounded_instructions("  Use search first.\n"),
            "Use search first."
        );
        let long = "é".repeat(crate::MAX_INSTRUCTIONS_BYTES);
        let cut = bounded_instructions(&long);
        let (kept, note) = cut.split_once('\n').unwrap();
        assert_eq!(kept.len(), crate::MAX_INSTRUCTIONS_BYTES);
        assert_eq!(
            note,
            format!(
                "[… cut by toolweave: the server's instructions are {} bytes; the first {} are shown]",
                2 * crate::MAX_INSTRUCTIONS_BYTES,
                crate::MAX_INSTRUCTIONS_BYTES
            )
        );
    }
}
