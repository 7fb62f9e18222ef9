//! Remote servers over HTTP: the client toolweave uses for them, and the words for what went
//! wrong. The transports are `streamable.rs` and `sse.rs`.
//!
//! Secrets stay out of every text made here. A configured URL may carry a key in its query and
//! header values often hold tokens, so nothing here prints a request's URL, a header value or a
//! response body: reqwest's errors are reduced to their cause (without the URL) before rmcp, the
//! logs or a message see them, and messages show the URL as written in the config file.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::streamable_http_client::{SseError, StreamableHttpError};
use toolweave_config::Expanded;

use crate::bounded::MAX_MESSAGE_BYTES;

/// How long a TCP connection (and TLS handshake) may take; the startup and call timeouts bound
/// the whole exchange.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Same-origin redirects followed for one request.
const MAX_REDIRECTS: usize = 10;

/// Why a request to a remote server failed, in words without its URL or headers.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{cause}")]
pub(crate) struct HttpFailure {
    /// The cause and what to change.
    pub(crate) cause: String,
    /// Whether the connection itself failed (refused, reset, TLS, timed out): the server is not
    /// reachable as it was, so the run ends and a later call connects again.
    pub(crate) connection: bool,
    /// Whether the server wants a login toolweave does not have (or no longer has): the person
    /// runs `toolweave login`, and the cause says why.
    pub(crate) login: bool,
}

impl HttpFailure {
    pub(crate) fn new(cause: impl Into<String>, connection: bool) -> Self {
        Self {
            cause: cause.into(),
            connection,
            login: false,
        }
    }

    /// The server wants a login: `cause` says why (no login, one it refused, more scopes).
    pub(crate) fn login(cause: impl Into<String>) -> Self {
        Self {
            cause: cause.into(),
            connection: false,
            login: true,
        }
    }
}

/// The HTTP client shared by every remote server: rustls with the ring provider, the system's
/// certificate roots, same-origin redirects only (a redirect elsewhere would carry the headers
/// to another host).
pub(crate) fn http_client() -> Result<reqwest::Client, HttpFailure> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            build_client().map_err(|error| format!("its HTTP client could not be set up: {error}"))
        })
        .clone()
        .map_err(|cause| HttpFailure::new(cause, false))
}

fn build_client() -> Result<reqwest::Client, String> {
    client_builder()?
        .redirect(same_origin_redirects())
        .build()
        .map_err(|error| describe_reqwest(&error).cause)
}

/// A client builder with toolweave's TLS (rustls with ring, the platform's verifier) and connect
/// timeout; the caller chooses how redirects are followed.
pub(crate) fn client_builder() -> Result<reqwest::ClientBuilder, String> {
    use rustls_platform_verifier::BuilderVerifierExt;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| error.to_string())?
        .with_platform_verifier()
        .map_err(|error| error.to_string())?
        .with_no_client_auth();
    Ok(reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .connect_timeout(CONNECT_TIMEOUT))
}

/// Follows 307/308 redirects within the same origin (they keep the method and body); any other
/// redirect is answered as it is, and explained from its status.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// The configured headers as a request carries them. The config checked names and values; a
/// header that still does not fit is named (never its value).
pub(crate) fn header_map(headers: &BTreeMap<String, Expanded>) -> Result<HeaderMap, HttpFailure> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let invalid = || {
            HttpFailure::new(
                format!(
                    "the header {name:?} is not a valid HTTP header; check \"headers\" in the config file"
                ),
                false,
            )
        };
        let header_name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid())?;
        let mut header_value = HeaderValue::from_str(value.value()).map_err(|_| invalid())?;
        header_value.set_sensitive(true);
        map.insert(header_name, header_value);
    }
    Ok(map)
}

/// What a reqwest error means, without its URL.
pub(crate) fn describe_reqwest(error: &reqwest::Error) -> HttpFailure {
    let chain = error_chain(error);
    let lower = chain.to_ascii_lowercase();
    if let Some(status) = error.status() {
        return HttpFailure::new(describe_status(status.as_u16()), false);
    }
    if is_tls_failure(error) || lower.contains("certificate") {
        return HttpFailure::new(
            format!(
                "the TLS handshake failed ({}); check that \"url\" names the server's host as its certificate does and that the certificate is valid (an http:// server needs an http:// url)",
                innermost(error)
            ),
            true,
        );
    }
    if let Some(io) = io_source(error) {
        use std::io::ErrorKind;
        match io.kind() {
            ErrorKind::ConnectionRefused => {
                return HttpFailure::new(
                    "the connection was refused: nothing accepts connections at that host and port; check that the server is running and that \"url\" is right",
                    true,
                );
            }
            ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe => {
                return HttpFailure::new(
                    format!("the connection was closed by the server ({io})"),
                    true,
                );
            }
            ErrorKind::TimedOut => {
                return HttpFailure::new(
                    "connecting timed out; check the host and port in \"url\", and that a firewall lets the connection through",
                    true,
                );
            }
            _ => {}
        }
    }
    if lower.contains("dns error") || lower.contains("failed to lookup address") {
        return HttpFailure::new(
            "the host name could not be resolved; check the host in \"url\"",
            true,
        );
    }
    if error.is_timeout() {
        return HttpFailure::new(
            "the request timed out; check that the server is reachable at \"url\"",
            true,
        );
    }
    if error.is_connect() {
        return HttpFailure::new(
            format!("connecting failed ({}); check \"url\"", innermost(error)),
            true,
        );
    }
    if error.is_redirect() {
        return HttpFailure::new(
            "it redirected too often; put the final address in \"url\"",
            false,
        );
    }
    if error.is_builder() {
        return HttpFailure::new(
            format!(
                "the request could not be made ({}); check \"url\"",
                innermost(error)
            ),
            false,
        );
    }
    HttpFailure::new(chain, error.is_request() || error.is_body())
}

/// What an HTTP status answered to an MCP request means, and what to change.
pub(crate) fn describe_status(status: u16) -> String {
    let reason = reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|code| code.canonical_reason())
        .map(|reason| format!(" {reason}"))
        .unwrap_or_default();
    let remedy = match status {
        401 => {
            "the server wants credentials it did not get or did not accept; check \"headers\" in the config file (for example \"Authorization\": \"Bearer ${TOKEN}\") and that the variables they use hold a valid token, or, for a server that signs in with OAuth, remove the \"Authorization\" header and run `toolweave login` with the server's name"
        }
        403 => {
            "the credentials were accepted but do not allow this; check the token's permissions or scopes"
        }
        404 => {
            "there is no MCP endpoint at that address; check the path in \"url\" (streamable HTTP endpoints often end in /mcp, SSE ones in /sse)"
        }
        405 => {
            "the address does not take MCP requests this way; check \"url\" and \"type\" (\"http\" for streamable HTTP, \"sse\" for the older HTTP+SSE transport)"
        }
        406 | 415 => {
            "the server does not speak this MCP transport at that address; check \"type\" and \"url\""
        }
        301 | 302 | 303 | 307 | 308 => {
            "the server redirects elsewhere; put the address it redirects to in \"url\""
        }
        429 => "the server is limiting requests; wait, or ask its operator for a higher limit",
        500..=599 => "the server failed; it may be overloaded or broken, see its logs",
        _ => "check \"url\" and \"headers\" in the config file",
    };
    format!("it answered HTTP {status}{reason}: {remedy}")
}

/// What a failed rmcp exchange over HTTP means, and whether the connection itself failed.
pub(crate) fn describe_http_error(error: &StreamableHttpError<HttpFailure>) -> HttpFailure {
    use StreamableHttpError as E;
    match error {
        E::Client(failure) => failure.clone(),
        E::HttpStatus(status) => HttpFailure::new(describe_status(status.status), false),
        E::UnexpectedServerResponse(text) => match http_status_in(text) {
            Some(status) => HttpFailure::new(describe_status(status), false),
            None => HttpFailure::new(
                format!("it sent an answer toolweave cannot use ({text})"),
                false,
            ),
        },
        E::AuthRequired(_) => HttpFailure::new(describe_status(401), false),
        E::InsufficientScope(_) => HttpFailure::new(describe_status(403), false),
        E::UnexpectedContentType(content_type) => HttpFailure::new(
            format!(
                "it answered with {}, neither JSON nor an event stream; check that \"url\" is the server's MCP endpoint and \"type\" its transport",
                content_type
                    .as_deref()
                    .map_or("no content type".to_owned(), |kind| format!(
                        "content type {kind:?}"
                    ))
            ),
            false,
        ),
        E::ResponseBodyTooLarge { .. } => HttpFailure::new(
            format!(
                "it sent a message longer than {} MiB, which toolweave does not accept (a tool result that large: ask the tool for less)",
                MAX_MESSAGE_BYTES / (1024 * 1024)
            ),
            false,
        ),
        E::ReservedHeaderConflict(name) => HttpFailure::new(
            format!("the header {name:?} is set by toolweave itself; remove it from \"headers\""),
            false,
        ),
        E::SessionExpired | E::SessionRecoveryTimeout | E::ReinitializationFailed(_) => {
            HttpFailure::new(format!("its session ended ({error})"), true)
        }
        E::Sse(SseError::Body(body)) => {
            HttpFailure::new(format!("its event stream broke ({body})"), true)
        }
        E::Io(_) | E::Sse(_) | E::UnexpectedEndOfStream | E::TransportChannelClosed => {
            HttpFailure::new(format!("the connection broke ({error})"), true)
        }
        other => HttpFailure::new(other.to_string(), false),
    }
}

/// `HTTP 401 Unauthorized: ...` → 401.
fn http_status_in(text: &str) -> Option<u16> {
    let rest = text.strip_prefix("HTTP ")?;
    rest.get(..3)?.parse().ok()
}

/// Finds the transport's failure in an error from rmcp: the HTTP error of the streamable HTTP
/// transport, or the SSE transport's own.
pub(crate) fn find_failure(error: &(dyn std::error::Error + 'static)) -> Option<HttpFailure> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(http) = error.downcast_ref::<StreamableHttpError<HttpFailure>>() {
            return Some(describe_http_error(http));
        }
        if let Some(failure) = error.downcast_ref::<HttpFailure>() {
            return Some(failure.clone());
        }
        current = error.source();
    }
    None
}

/// Why `initialize` over HTTP failed, in words without secrets.
pub(crate) fn describe_initialize_error(error: &ClientInitializeError) -> HttpFailure {
    // `server/discover` failed, then `initialize`: the second failure is the one to name.
    if let ClientInitializeError::LegacyFallbackFailed { fallback, .. } = error {
        return describe_initialize_error(fallback);
    }
    let found = match error {
        ClientInitializeError::TransportError { error, .. } => find_failure(error),
        other => find_failure(other),
    };
    let cause = match (found, error) {
        (Some(failure), _) => return failure,
        (None, ClientInitializeError::JsonRpcError(data)) => {
            format!("it answered initialize with an error: {}", data.message)
        }
        (None, ClientInitializeError::ConnectionClosed(_)) => {
            "the connection closed before it answered initialize".to_owned()
        }
        (None, other) => format!("initialize failed: {other}"),
    };
    HttpFailure::new(cause, false)
}

/// Why a request over HTTP failed: the cause, and whether the connection itself failed.
pub(crate) fn describe_service_error(error: &ServiceError) -> Option<HttpFailure> {
    match error {
        ServiceError::TransportSend(error) => {
            find_failure(error).or_else(|| Some(HttpFailure::new(error.error.to_string(), true)))
        }
        ServiceError::TransportClosed => Some(HttpFailure::new("the connection closed", true)),
        _ => None,
    }
}

fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(error);
    while let Some(error) = current {
        let text = match error.downcast_ref::<reqwest::Error>() {
            // Its own text names the URL; the parts after it say what happened.
            Some(_) => String::new(),
            None => error.to_string(),
        };
        if !text.is_empty() && !parts.iter().any(|part| part.contains(&text)) {
            parts.push(text);
        }
        current = error.source();
    }
    if parts.is_empty() {
        "the request failed".to_owned()
    } else {
        parts.join(": ")
    }
}

fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    if current.downcast_ref::<reqwest::Error>().is_some() {
        return "no further detail".to_owned();
    }
    current.to_string()
}

/// Whether a rustls error is in the chain (hyper-rustls wraps it in `io::Error`s, whose `source`
/// skips it).
fn is_tls_failure(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        if error.downcast_ref::<rustls::Error>().is_some() {
            return true;
        }
        if let Some(io) = error.downcast_ref::<std::io::Error>()
            && innermost_io(io)
                .get_ref()
                .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some())
        {
            return true;
        }
        current = error.source();
    }
    false
}

/// The `io::Error` inside `io::Error`s that wrap one another.
fn innermost_io(mut io: &std::io::Error) -> &std::io::Error {
    while let Some(inner) = io
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<std::io::Error>())
    {
        io = inner;
    }
    io
}

fn io_source<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a std::io::Error> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            return Some(innermost_io(io));
        }
        current = error.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_say_what_to_change() {
        assert_eq!(
            describe_status(401),
            "it answered HTTP 401 Unauthorized: the server wants credentials it did not get or did not accept; check \"headers\" in the config file (for example \"Authorization\": \"Bearer ${TOKEN}\") and that the variables they use hold a valid token, or, for a server that signs in with OAuth, remove the \"Authorization\" header and run `toolweave login` with the server's name"
        );
        assert!(describe_status(404).contains("check the path in \"url\""));
        assert_eq!(http_status_in("HTTP 404 Not Found: x"), Some(404));
        assert_eq!(http_status_in("something else"), None);
    }

    #[tokio::test]
    async fn a_refused_connection_is_explained_without_the_url() {
        // Bind then drop a listener: the port is then (almost surely) closed.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let client = http_client().unwrap();
        let error = client
            .get(format!("http://127.0.0.1:{port}/mcp?key=very-secret"))
            .send()
            .await
            .unwrap_err();
        let failure = describe_reqwest(&error);
        assert!(
            failure.cause.starts_with("the connection was refused"),
            "{failure:?}"
        );
        assert!(failure.connection);
        assert!(!failure.cause.contains("very-secret"));
    }
}
