//! MCP over streamable HTTP: `/mcp`, one MCP session per client, protection against DNS
//! rebinding (`Host` and `Origin` checked), an optional bearer token, and a graceful end.
//!
//! The protocol (sessions, SSE streams, Host and Origin checks) is rmcp's
//! `StreamableHttpService`; this module decides who may reach it (the bind rule and the token),
//! what it is handed (every request body read and decoded here first, see [`screen`]), and how
//! serving ends. Every session gets its own [`ToolweaveServer`] handle over the one
//! shared gateway, so a request's cancellation belongs to that request alone.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::ToolweaveServer;
use crate::incoming::{self, Incoming, Invalid};

/// The path MCP is served at.
pub const MCP_PATH: &str = "/mcp";

/// How long running executions may go on once serving is asked to end.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
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
    /// The token every request must carry, when set.
    pub token: Option<BearerToken>,
    /// `Host` values accepted besides the loopback names and the bound address.
    pub allowed_hosts: Vec<String>,
    /// Browser `Origin`s accepted besides pages on this machine.
    pub allowed_origins: Vec<String>,
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

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

/// Why serving over HTTP could not begin.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// A non-loopback address without a token.
    #[error(
        "refusing to serve on {address} without an auth token: any machine that can reach that \
         address could run code with every upstream server's authority. Bind to 127.0.0.1 (or \
         ::1), or set a token in an environment variable and pass --auth-token-env VAR"
    )]
    OpenWithoutToken {
        /// The address asked for.
        address: SocketAddr,
    },
    /// The address could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address asked for.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
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
    if !address.ip().is_loopback() && options.token.is_none() {
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

    /// Serves MCP at [`MCP_PATH`] until `stop` fires, then ends gracefully: no new connections;
    /// running executions get [`SHUTDOWN_GRACE`] to finish; then every session is closed (which
    /// cancels what still runs) and open connections get a moment to close.
    pub async fn serve(self, handler: ToolweaveServer, stop: CancellationToken) {
        let sessions = CancellationToken::new();
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
            .with_max_request_body_bytes(MAX_REQUEST_BYTES)
            .with_cancellation_token(sessions.clone());
        let session_handler = handler.clone();
        let mut sessions_manager = LocalSessionManager::default();
        sessions_manager.session_config.completed_cache_ttl = COMPLETED_ANSWER_KEPT;
        let sessions_manager = Arc::new(sessions_manager);
        let service = StreamableHttpService::new(
            move || Ok(session_handler.for_session()),
            sessions_manager.clone(),
            config,
        );
        let router = Router::new()
            .route_service(MCP_PATH, service)
            .route_layer(axum::middleware::from_fn_with_state(
                sessions_manager,
                screen,
            ))
            .fallback(not_found)
            .layer(axum::middleware::from_fn_with_state(
                Arc::new(self.options.token.clone()),
                authorize,
            ));
        // Said whatever the log level: with port 0 this is how the caller learns the port.
        eprintln!(
            "toolweave: serving MCP at http://{}{MCP_PATH}{}",
            self.local_address,
            if self.options.token.is_some() {
                " (bearer token required)"
            } else {
                ""
            }
        );

        let stopping = stop.clone();
        // Answers are small and each waits on the one before: without TCP_NODELAY, Nagle's
        // algorithm and delayed ACKs hold every answer back ~40 ms.
        let listener = self.listener.tap_io(|stream| {
            if let Err(error) = stream.set_nodelay(true) {
                tracing::debug!(%error, "cannot set TCP_NODELAY");
            }
        });
        let server = axum::serve(listener, router)
            .with_graceful_shutdown(async move { stopping.cancelled().await });
        let server = tokio::spawn(async move { server.await });
        stop.cancelled().await;
        tracing::info!(
            grace_ms = SHUTDOWN_GRACE.as_millis(),
            "stopping: no new connections; running executions may finish"
        );
        if !handler.drain(SHUTDOWN_GRACE).await {
            tracing::warn!("executions still running after the grace period are cancelled");
        }
        sessions.cancel();
        match tokio::time::timeout(CONNECTION_CLOSE_WAIT, server).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(error))) => tracing::warn!(%error, "the HTTP server ended with an error"),
            Ok(Err(error)) => tracing::warn!(%error, "the HTTP server task failed"),
            Err(_elapsed) => tracing::debug!("connections still open at shutdown are dropped"),
        }
    }
}

/// Checks the bearer token, when one is set. The answer to a missing or wrong token says what
/// is expected, never what was sent.
async fn authorize(
    State(token): State<Arc<Option<BearerToken>>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(token) = token.as_ref() else {
        return next.run(request).await;
    };
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
    match presented {
        Some(presented) if token.matches(presented.as_bytes()) => next.run(request).await,
        presented => {
            let message = if presented.is_some() {
                "toolweave: the bearer token does not match; send the token set in the environment \
                 variable named by --auth-token-env where toolweave runs\n"
            } else {
                "toolweave: this server requires a header `Authorization: Bearer <token>`, with the \
                 token set in the environment variable named by --auth-token-env where toolweave \
                 runs\n"
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
/// - a `DELETE` naming a session that does not exist gets `404`, as MCP asks (rmcp answers
///   `202` whatever the id);
/// - a `POST` body is read here, at most [`MAX_REQUEST_BYTES`]: one that cannot be read (its
///   chunked framing is broken, as when `Content-Length` and `Transfer-Encoding: chunked` frame
///   one body two ways) gets `400` rather than rmcp's `500`, one too long `413`;
/// - a body that is no message toolweave can serve gets `400` with the JSON-RPC error that says
///   why, addressed to the request's id when it has one (rmcp answers `415` with serde's words);
///   lone surrogate escapes (`"\ud800"`) are replaced before rmcp decodes it, as over stdio.
async fn screen(
    State(sessions): State<Arc<LocalSessionManager>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() == Method::DELETE {
        let session = request
            .headers()
            .get("mcp-session-id")
            .and_then(|id| id.to_str().ok())
            .map(|id| id.to_owned().into());
        if let Some(session) = session
            && matches!(sessions.has_session(&session).await, Ok(false))
        {
            return (
                StatusCode::NOT_FOUND,
                "toolweave: no such session (it ended, or never began); start a new one with initialize\n",
            )
                .into_response();
        }
        return next.run(request).await;
    }
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let body = match read_body(body).await {
        Ok(body) => body,
        Err(refusal) => return refusal,
    };
    if let Incoming::Invalid(invalid) = incoming::decode(&body) {
        return json_rpc_error(&invalid);
    }
    let body = match incoming::replace_lone_surrogates(&body) {
        std::borrow::Cow::Owned(replaced) => replaced,
        std::borrow::Cow::Borrowed(_) => body,
    };
    next.run(Request::from_parts(parts, Body::from(body))).await
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
