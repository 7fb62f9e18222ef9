//! MCP over streamable HTTP: `/mcp`, one MCP session per client (or none, `--stateless`),
//! protection against DNS rebinding (`Host` and `Origin` checked), an optional bearer token,
//! health (`/healthz`, `/readyz`) and metrics (`/metrics`), and a graceful end.
//!
//! The protocol (sessions, SSE streams, Host and Origin checks) is rmcp's
//! `StreamableHttpService`; this module decides who may reach it (the bind rule and the token),
//! what it is handed (every request body read and decoded here first, see [`screen`]), and how
//! serving ends (see [`HttpListener::serve`]). Every session gets its own [`ToolweaveServer`]
//! handle over the one shared gateway, so a request's cancellation belongs to that request alone.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use rmcp::transport::common::server_side_http::SessionId;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::ToolweaveServer;
use crate::health::{self, HEALTH_PATH, READY_PATH, Readiness};
use crate::incoming::{self, Incoming, Invalid};
use crate::metrics::Metrics;
use crate::sessions::Sessions;

/// The path MCP is served at.
pub const MCP_PATH: &str = "/mcp";

pub use crate::http_error::HttpError;
pub use crate::metrics::METRICS_PATH;

/// How long running executions may go on once serving is asked to end.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// While draining, serving ends once no execution runs and no request has come for this long:
/// long enough for a load balancer checking `/readyz` every half second or so to stop sending
/// requests here, so they are not refused a connection.
const DRAIN_QUIET: Duration = Duration::from_secs(1);
/// After the grace, how long open connections get to close before serving ends regardless.
const CONNECTION_CLOSE_WAIT: Duration = Duration::from_secs(2);
/// How long a session keeps an answer already sent, for a client that reconnects to read it
/// again. rmcp's default is 60 s; at hundreds of executions a second that holds tens of
/// thousands of answers in memory, while a client reconnects within seconds (it is told to retry
/// after 3 s).
const COMPLETED_ANSWER_KEPT: Duration = Duration::from_secs(10);
/// Largest request body: a program and its arguments, with room to spare.
const MAX_REQUEST_BYTES: usize = 8 * 1024 * 1024;

/// Host names every loopback server answers to.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];
/// Browser origins allowed by default: pages served from this machine.
const LOOPBACK_ORIGINS: [&str; 3] = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// What `serve --http` was asked for.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub address: SocketAddr,
    /// A token every request may carry, when set: its clients run under the gateway's rules.
    pub token: Option<BearerToken>,
    /// The identities' tokens: a request carrying one runs under that identity's rules. With a
    /// token or identities set, every request must carry one of them.
    pub identities: Vec<Arc<IdentityToken>>,
    /// `Host` values accepted besides the loopback names and the bound address.
    pub allowed_hosts: Vec<String>,
    /// Browser `Origin`s accepted besides pages on this machine.
    pub allowed_origins: Vec<String>,
    /// Every request stands alone: no sessions, so any copy behind a balancer can answer it.
    pub stateless: bool,
    /// What every session id begins with (a name and `.`), so a balancer can tell the copy that
    /// holds a session from its id (see [`crate::sessions::session_id_prefix`]).
    pub session_id_prefix: Option<String>,
    /// Metrics to serve at [`METRICS_PATH`] (behind the token, like MCP), when asked for here.
    pub metrics: Option<Arc<Metrics>>,
}

/// A bearer token, kept only as its SHA-256 digest: comparing digests in constant time hides
/// both the token's bytes and its length, and the token itself cannot end up in a log.
#[derive(Clone)]
pub struct BearerToken {
    digest: [u8; 32],
}

impl BearerToken {
    /// A token from its text; `None` when it is empty or only whitespace.
    pub fn new(token: &str) -> Option<Self> {
        let token = token.trim();
        (!token.is_empty()).then(|| Self {
            digest: Sha256::digest(token.as_bytes()).into(),
        })
    }

    /// Whether `presented` is this token, in time independent of where they differ.
    pub fn matches(&self, presented: &[u8]) -> bool {
        let digest: [u8; 32] = Sha256::digest(presented).into();
        digest.ct_eq(&self.digest).into()
    }
}

/// The token of an identity, the identity it names, and the rate its executions may start at.
#[derive(Debug)]
pub struct IdentityToken {
    token: BearerToken,
    identity: Arc<toolweave_core::Identity>,
    rate: Option<(governor::DefaultDirectRateLimiter, std::num::NonZeroU32)>,
}

impl IdentityToken {
    /// `identity`'s `token`, its executions limited to `per_minute` a minute over all its
    /// sessions when given.
    pub fn new(
        token: BearerToken,
        identity: toolweave_core::Identity,
        per_minute: Option<std::num::NonZeroU32>,
    ) -> Self {
        Self {
            token,
            identity: Arc::new(identity),
            rate: per_minute.map(|per_minute| {
                let quota = governor::Quota::per_minute(per_minute);
                (governor::RateLimiter::direct(quota), per_minute)
            }),
        }
    }

    /// The identity this token names.
    pub fn identity(&self) -> &Arc<toolweave_core::Identity> {
        &self.identity
    }

    /// Whether `presented` is this token.
    pub fn matches(&self, presented: &[u8]) -> bool {
        self.token.matches(presented)
    }

    /// Takes one execution from the identity's rate: `None` when it may start, else how long
    /// until it may and the identity's rate.
    pub(crate) fn rate_limited(&self) -> Option<(Duration, u32)> {
        let (limiter, per_minute) = self.rate.as_ref()?;
        let not_until = limiter.check().err()?;
        use governor::clock::Clock;
        let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
        Some((wait, per_minute.get()))
    }
}

/// The tokens requests may carry: the one of `--auth-token-env` and the identities'.
#[derive(Debug, Default)]
struct Tokens {
    token: Option<BearerToken>,
    identities: Vec<Arc<IdentityToken>>,
}

impl Tokens {
    fn any(&self) -> bool {
        self.token.is_some() || !self.identities.is_empty()
    }
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

/// A listening socket, ready to serve.
#[derive(Debug)]
pub struct HttpListener {
    listener: TcpListener,
    options: HttpOptions,
    local_address: SocketAddr,
}

/// Binds the address, after checking that it may be bound the way it was asked.
pub async fn bind(options: HttpOptions) -> Result<HttpListener, HttpError> {
    let address = options.address;
    if !address.ip().is_loopback() && options.token.is_none() && options.identities.is_empty() {
        return Err(HttpError::OpenWithoutToken { address });
    }
    let listener = TcpListener::bind(address)
        .await
        .map_err(|source| HttpError::Bind { address, source })?;
    let local_address = listener
        .local_addr()
        .map_err(|source| HttpError::Bind { address, source })?;
    Ok(HttpListener {
        listener,
        options,
        local_address,
    })
}

impl HttpListener {
    /// The address actually bound (the port is chosen by the system when 0 was asked for).
    pub fn local_address(&self) -> SocketAddr {
        self.local_address
    }

    /// Serves MCP at [`MCP_PATH`] (with health and, when asked for, metrics) until `stop`
    /// fires, then drains and ends: `/readyz` answers 503 at once, and nothing new starts (a
    /// new session is refused with 503, so a balancer sends it to another copy; a request in a
    /// session here gets 404, so its client starts a new session elsewhere), while what runs
    /// goes on and is answered. Once no execution runs and no request has come for
    /// [`DRAIN_QUIET`] (or after [`SHUTDOWN_GRACE`], cancelling what still runs), every session
    /// is closed and open connections get a moment to close.
    pub async fn serve(self, handler: ToolweaveServer, stop: CancellationToken) {
        let handler = handler.with_identities(!self.options.identities.is_empty());
        let sessions = CancellationToken::new();
        let config = self
            .protocol_config()
            .with_cancellation_token(sessions.clone());
        let mut local = LocalSessionManager::default();
        local.session_config.completed_cache_ttl = COMPLETED_ANSWER_KEPT;
        let sessions_manager =
            Arc::new(Sessions::new(local, self.options.session_id_prefix.clone()));
        let session_handler = handler.clone();
        let stateless = self.options.stateless;
        let service = StreamableHttpService::new(
            move || {
                Ok(if stateless {
                    session_handler.for_request()
                } else {
                    session_handler.for_session()
                })
            },
            sessions_manager.clone(),
            config,
        );
        let metrics = self.options.metrics.clone();
        if let Some(metrics) = &metrics {
            if stateless {
                metrics.fixed_sessions(0);
            } else {
                metrics.count_sessions(sessions_manager.clone());
            }
        }
        let served = Arc::new(Served {
            gateway: handler.gateway().clone(),
            readiness: Readiness::new(),
            metrics,
            sessions: sessions_manager,
            started: Instant::now(),
            last_request_ms: AtomicU64::new(0),
        });
        let tokens = Tokens {
            token: self.options.token.clone(),
            identities: self.options.identities.clone(),
        };
        let required = tokens.any();
        let router = routes(service, served.clone(), tokens);
        self.announce(required);

        let closing = CancellationToken::new();
        let closed = closing.clone();
        // Answers are small and each waits on the one before: without TCP_NODELAY, Nagle's
        // algorithm and delayed ACKs hold every answer back (docs/benchmarks.md, "Figures
        // behind choices in the code").
        let listener = self.listener.tap_io(|stream| {
            if let Err(error) = stream.set_nodelay(true) {
                tracing::debug!(%error, "cannot set TCP_NODELAY");
            }
        });
        let server = axum::serve(listener, router)
            .with_graceful_shutdown(async move { closed.cancelled().await });
        let server = tokio::spawn(async move { server.await });
        stop.cancelled().await;
        served.readiness.drain();
        tracing::info!(
            grace_ms = SHUTDOWN_GRACE.as_millis(),
            "draining: /readyz answers 503 and nothing new starts; running executions may finish"
        );
        if !served.drain(&handler).await {
            tracing::warn!("executions still running after the grace period are cancelled");
        }
        closing.cancel();
        sessions.cancel();
        match tokio::time::timeout(CONNECTION_CLOSE_WAIT, server).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(error))) => tracing::warn!(%error, "the HTTP server ended with an error"),
            Ok(Err(error)) => tracing::warn!(%error, "the HTTP server task failed"),
            Err(_elapsed) => tracing::debug!("connections still open at shutdown are dropped"),
        }
    }

    /// Says where MCP is served, whatever the log level: with port 0 this is how the caller
    /// learns the port.
    fn announce(&self, token_required: bool) {
        eprintln!(
            "toolweave: serving MCP at http://{}{MCP_PATH}{}{}",
            self.local_address,
            if token_required {
                " (bearer token required)"
            } else {
                ""
            },
            if self.options.stateless {
                " (stateless: every request stands alone)"
            } else {
                ""
            }
        );
    }

    /// rmcp's configuration: the hosts and origins accepted, the body limit, and sessions or none.
    fn protocol_config(&self) -> StreamableHttpServerConfig {
        let mut allowed_hosts: Vec<String> = LOOPBACK_HOSTS
            .iter()
            .map(|host| (*host).to_owned())
            .collect();
        if !self.local_address.ip().is_unspecified() {
            allowed_hosts.push(self.local_address.ip().to_string());
        }
        allowed_hosts.extend(self.options.allowed_hosts.iter().cloned());
        let mut allowed_origins: Vec<String> = LOOPBACK_ORIGINS
            .iter()
            .map(|origin| (*origin).to_owned())
            .collect();
        allowed_origins.extend(self.options.allowed_origins.iter().cloned());
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(allowed_hosts)
            .with_allowed_origins(allowed_origins)
            .enforce_origin_validation()
            .with_max_request_body_bytes(MAX_REQUEST_BYTES);
        if self.options.stateless {
            // A plain JSON answer where nothing else is sent before it; an execution whose
            // upstream servers report progress answers as an event stream.
            config
                .with_legacy_session_mode(false)
                .with_json_response(true)
        } else {
            config
        }
    }
}

/// MCP behind its screen, health, metrics, and the token in front of all but health.
fn routes(
    mcp: StreamableHttpService<ToolweaveServer, Sessions>,
    served: Arc<Served>,
    tokens: Tokens,
) -> Router {
    Router::new()
        .route_service(MCP_PATH, mcp)
        .route_layer(axum::middleware::from_fn_with_state(served.clone(), screen))
        .route(
            HEALTH_PATH,
            axum::routing::get(|| async { health::alive() }),
        )
        .route(READY_PATH, axum::routing::get(readyz))
        .route(METRICS_PATH, axum::routing::get(metrics_text))
        .with_state(served)
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(tokens),
            authorize,
        ))
}

/// What the routes besides MCP, and the screen in front of MCP, share.
struct Served {
    gateway: Arc<toolweave_core::Gateway>,
    readiness: Readiness,
    metrics: Option<Arc<Metrics>>,
    sessions: Arc<Sessions>,
    /// When serving began; [`Self::last_request_ms`] counts from here.
    started: Instant,
    /// When the last MCP request was let through, in milliseconds after [`Self::started`].
    last_request_ms: AtomicU64,
}

impl Served {
    /// An MCP request was let through now.
    fn request_arrived(&self) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_request_ms.fetch_max(now, Ordering::Relaxed);
    }

    /// Time since the last MCP request was let through.
    fn since_last_request(&self) -> Duration {
        let last = Duration::from_millis(self.last_request_ms.load(Ordering::Relaxed));
        self.started.elapsed().saturating_sub(last)
    }

    /// Waits until no execution runs and no request has come for [`DRAIN_QUIET`], or at most
    /// [`SHUTDOWN_GRACE`]; whether every execution had ended.
    async fn drain(&self, handler: &ToolweaveServer) -> bool {
        let until = Instant::now() + SHUTDOWN_GRACE;
        loop {
            let running = handler.executions_running();
            if running == 0 && self.since_last_request() >= DRAIN_QUIET {
                return true;
            }
            if Instant::now() >= until {
                return running == 0;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn readyz(State(served): State<Arc<Served>>) -> Response {
    health::ready(&served.readiness, &served.gateway)
}

async fn metrics_text(State(served): State<Arc<Served>>) -> Response {
    match &served.metrics {
        Some(metrics) => (
            [(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
            metrics.render(&served.gateway).await,
        )
            .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            "toolweave: metrics are off; start it with --metrics to serve them here\n",
        )
            .into_response(),
    }
}

/// Checks the bearer token, when tokens are set, on every path but the health probes' (probes
/// carry no token, and those answers hold nothing secret); a request with an identity's token
/// carries that identity on (as an extension of the request). The answer to a missing or wrong
/// token says what is expected, never what was sent.
async fn authorize(
    State(tokens): State<Arc<Tokens>>,
    mut request: Request,
    next: Next,
) -> Response {
    if !tokens.any() {
        return next.run(request).await;
    }
    if matches!(request.uri().path(), HEALTH_PATH | READY_PATH) {
        return next.run(request).await;
    }
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            let (scheme, credentials) = value.split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then(|| credentials.trim())
        });
    let identity = presented.and_then(|presented| {
        // Every token is compared, so the time taken does not tell which one matched.
        let matched: Vec<&Arc<IdentityToken>> = tokens
            .identities
            .iter()
            .filter(|identity| identity.matches(presented.as_bytes()))
            .collect();
        matched.first().map(|identity| Arc::clone(identity))
    });
    let default = presented.is_some_and(|presented| {
        tokens
            .token
            .as_ref()
            .is_some_and(|token| token.matches(presented.as_bytes()))
    });
    match (identity, default) {
        (Some(identity), _) => {
            request.extensions_mut().insert(identity);
            next.run(request).await
        }
        (None, true) => next.run(request).await,
        (None, false) => {
            let message = if presented.is_some() {
                "toolweave: the bearer token does not match; send the token set in the environment \
                 variable named by --auth-token-env, or an identity's (its tokenEnv in the settings \
                 file), where toolweave runs\n"
            } else {
                "toolweave: this server requires a header `Authorization: Bearer <token>`, with the \
                 token set in the environment variable named by --auth-token-env, or an \
                 identity's (its tokenEnv in the settings file), where toolweave runs\n"
            };
            let mut response = (StatusCode::UNAUTHORIZED, message).into_response();
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"toolweave\""),
            );
            response
        }
    }
}

/// What reaches rmcp's service, checked first (after the token):
///
/// - while this copy drains, nothing new starts (see [`refuse_while_draining`]);
/// - a `DELETE` naming a session that does not exist gets `404`, as MCP asks (rmcp answers
///   `202` whatever the id), and one that ends a session `200` (rmcp's `202` is taken by the
///   official Python SDK for a failure);
/// - a `POST` body is read here, at most [`MAX_REQUEST_BYTES`]: one that cannot be read (its
///   chunked framing is broken, as when `Content-Length` and `Transfer-Encoding: chunked` frame
///   one body two ways) gets `400` rather than rmcp's `500`, one too long `413`;
/// - a body that is no message toolweave can serve gets `400` with the JSON-RPC error that says
///   why, addressed to the request's id when it has one (rmcp answers `415` with serde's words);
///   lone surrogate escapes (`"\ud800"`) are replaced before rmcp decodes it, as over stdio.
async fn screen(State(served): State<Arc<Served>>, request: Request, next: Next) -> Response {
    let session: Option<SessionId> = request
        .headers()
        .get("mcp-session-id")
        .and_then(|id| id.to_str().ok())
        .map(|id| id.to_owned().into());
    if request.method() == Method::DELETE {
        if let Some(session) = session
            && matches!(served.sessions.has_session(&session).await, Ok(false))
        {
            return (
                StatusCode::NOT_FOUND,
                "toolweave: no such session (it ended, or never began); start a new one with initialize\n",
            )
                .into_response();
        }
        served.request_arrived();
        let mut response = next.run(request).await;
        // rmcp answers an ended session `202`; the SDKs take `200` (or `204`) as ended.
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        return response;
    }
    if request.method() != Method::POST {
        // A client's event stream (`GET`) stays open, or comes back, whatever it is doing: it
        // does not count as a request arriving.
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let body = match read_body(body).await {
        Ok(body) => body,
        Err(refusal) => return refusal,
    };
    let incoming = incoming::decode(&body);
    if let Incoming::Invalid(invalid) = &incoming {
        return json_rpc_error(invalid);
    }
    if served.readiness.is_draining()
        && let Some(refusal) = refuse_while_draining(&served, session.as_ref(), &incoming).await
    {
        return refusal;
    }
    served.request_arrived();
    let body = match incoming::without_lone_surrogate_escapes(&body) {
        std::borrow::Cow::Owned(replaced) => replaced,
        std::borrow::Cow::Borrowed(_) => body,
    };
    next.run(Request::from_parts(parts, Body::from(body))).await
}

/// While this copy drains it starts nothing new: a message for no session here gets `503` (a
/// balancer tries another copy), and a request in a session here gets `404`, which tells the
/// client its session is over and to start a new one (on another copy). What work already
/// running needs still goes through: notifications (a cancellation) and the client's answers
/// to the server's requests (an approval).
async fn refuse_while_draining(
    served: &Served,
    session: Option<&SessionId>,
    incoming: &Incoming,
) -> Option<Response> {
    let known = match session {
        Some(session) => matches!(served.sessions.has_session(session).await, Ok(true)),
        None => false,
    };
    if !known {
        return Some(
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "1")],
                "toolweave: this copy is shutting down and takes no new sessions; connect again \
                 (behind a load balancer, another copy answers)\n",
            )
                .into_response(),
        );
    }
    let starts_work = matches!(incoming, Incoming::Message(message)
        if matches!(message.as_ref(), rmcp::model::ClientJsonRpcMessage::Request(_)));
    starts_work.then(|| {
        (
            StatusCode::NOT_FOUND,
            "toolweave: this copy is shutting down, and this session ends with it; start a new \
             session with initialize (behind a load balancer, another copy takes it)\n",
        )
            .into_response()
    })
}

/// A request body, or the answer to a body that cannot be read or is too long.
async fn read_body(body: Body) -> Result<Vec<u8>, Response> {
    use futures::StreamExt;
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    while let Some(piece) = stream.next().await {
        let piece = piece.map_err(|error| {
            // The innermost cause says what was wrong with the framing.
            let mut cause: &dyn std::error::Error = &error;
            while let Some(inner) = cause.source() {
                cause = inner;
            }
            (
                StatusCode::BAD_REQUEST,
                [(header::CONNECTION, "close")],
                format!(
                    "toolweave: the request body could not be read ({cause}). Frame it one way: with Content-Length, or with Transfer-Encoding: chunked, not both\n"
                ),
            )
                .into_response()
        })?;
        if bytes.len() + piece.len() > MAX_REQUEST_BYTES {
            // The rest of the body is not read, so the connection cannot carry another request:
            // the client is told to open a new one rather than find this one closed.
            return Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                [(header::CONNECTION, "close")],
                format!(
                    "toolweave: a request body is at most {} MiB ({MAX_REQUEST_BYTES} bytes); send less in one request\n",
                    MAX_REQUEST_BYTES / (1024 * 1024)
                ),
            )
                .into_response());
        }
        bytes.extend_from_slice(&piece);
    }
    Ok(bytes)
}

/// `400` with a JSON-RPC error as its body.
fn json_rpc_error(invalid: &Invalid) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        invalid.answer().to_string(),
    )
        .into_response()
}

async fn not_found(request: Request) -> Response {
    (
        StatusCode::NOT_FOUND,
        format!(
            "toolweave: nothing at {}; MCP is served at {MCP_PATH}\n",
            request.uri().path()
        ),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_matches_itself_only() {
        let token = BearerToken::new("s3cret-value").expect("a token");
        assert!(token.matches(b"s3cret-value"));
        assert!(!token.matches(b"s3cret-valuf"));
        assert!(!token.matches(b"s3cret"));
        assert!(!token.matches(b""));
        assert!(BearerToken::new("  ").is_none());
        assert_eq!(format!("{token:?}"), "BearerToken(..)");
    }
}
