//! Upstream MCP servers: one rmcp client each, started in the background, with timeouts.
//!
//! [`UpstreamManager::start`] spawns one task per configured server and returns at once. The task
//! owns the server's link for its whole life: a child process for a stdio server (stdin/stdout are
//! the MCP channel, stderr is read line by line into the log and a short tail), or an HTTP
//! connection for a remote one (streamable HTTP through rmcp's client, or the legacy HTTP+SSE
//! transport through a small client of our own). It runs `initialize` and `tools/list` under the
//! startup timeout, then watches for the process to exit, the connection to close, a
//! `notifications/tools/list_changed`, or shutdown. Each server's state is an enum (starting,
//! ready, down with the reason, stopped); every change bumps a version number that
//! [`UpstreamManager::subscribe`] exposes, so the catalog above knows when to rebuild.
//!
//! Calls go through the connection's cloneable `Peer`, which multiplexes requests: a hung call
//! does not hold up others to the same server. A call that times out or is cancelled is dropped,
//! and rmcp then sends `notifications/cancelled` upstream. A call's timeout is the tool's own
//! (`toolTimeouts` in the server's entry), else the server's (`timeout`), else
//! `--tool-timeout-ms`. A server that exits, or never came up (a remote server that was not
//! listening yet), is started again on a later call, waiting longer between starts each time it
//! keeps failing. A remote server that goes away shows when a call finds its connection broken:
//! that ends the run, and a later call connects again with the same backoff. A remote server's
//! requests carry the OAuth login [`login`] keeps for its URL, renewed as needed; one that needs a
//! login the person must give fails with [`Error::LoginNeeded`] (see `auth.rs`).
//!
//! A server's requests to the client (elicitation, sampling, roots) go to the client session
//! whose calls it is working on (`requests.rs`); what the server said about using it in
//! `initialize` (its instructions) is kept for [`ServerStatus`].
//!
//! What a server sends is read as bytes before rmcp sees it, by the connection's wire (`wire.rs`,
//! `decode.rs`): an answer that cannot be read fails its call at once with what is wrong
//! ([`Malformed`]), a bad tool definition is left out of the tool list with a warning, and an
//! answer belongs to a call only when its id matches in JSON type and value. A call that times out
//! says where its time went ([`Delivery`]): waiting in toolweave before it was sent, or with the
//! server.
//!
//! Errors ([`Error`]) are written for a model to read: the server, the cause (with the exit status
//! and the last lines of stderr when there are some; connection refused, TLS, or the HTTP status
//! for a remote server) and what to change. They never hold a secret: a remote server's URL is
//! shown as written in the config (`${VAR}` unresolved), header values are never shown, and the
//! HTTP client's errors are reduced to their cause before they reach rmcp or the log.

#![cfg_attr(
    test,
    allow(
        clippy::too_many_lines,
        reason = "a test reads top to bottom as one scenario"
    )
)]

mod auth;
mod bounded;
mod boxing;
mod breaker;
mod client;
mod decode;
mod error;
mod events;
mod handshake;
mod life;
mod lines;
mod manager;
mod notices;
mod process;
mod proxy;
mod remote;
mod requests;
mod sse;
mod status;
mod stderr;
mod streamable;
mod wire;

use std::time::Duration;

pub use auth::{
    LoginError, LoginOptions, LoginOutcome, LoginStatus, Logins, LogoutOutcome, StoreError,
    format_time, login, login_status, logout,
};
pub use error::{Delivery, Error, LimitFrom, Malformed, Result};
pub use manager::{CallOptions, Capability, UpstreamManager, definition};
pub use notices::{Listener, Notice, TraceContext};
pub use requests::{
    ClientConnection, ClientSession, ClientSessions, ForwardedAnswer, ForwardedRequest, Refusal,
    RequestKind,
};
pub use status::{ServerState, ServerStatus, failed_text};

/// toolweave's HTTP client (rustls with the platform's verifier, same-origin redirects only),
/// for the gateway's other HTTP requests (an LLM provider). `Err` says why it cannot be set up.
pub fn http_client() -> std::result::Result<reqwest::Client, String> {
    remote::http_client().map_err(|failure| failure.cause)
}

/// What went wrong with an HTTP request, without its URL (which may carry secrets), and what
/// to change.
pub fn describe_http_error(error: &reqwest::Error) -> String {
    remote::describe_reqwest(error).cause
}

/// The most of a server's instructions toolweave keeps, in bytes; longer ones are cut with a
/// note that says so.
pub const MAX_INSTRUCTIONS_BYTES: usize = 8 * 1024;

/// The `tracing` target of the spans toolweave exports as traces (here: one per upstream
/// request). They are `TRACE` spans, so the log filter leaves them off unless an exporter wants
/// them.
pub const SPAN_TARGET: &str = "toolweave::trace";

/// Timeouts the manager applies, and whom it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// How long a server may take from spawn (or connect) to a listed set of tools
    /// (`--startup-timeout-ms`).
    pub startup_timeout: Duration,
    /// Default time one tool call may take (`--tool-timeout-ms`); a server with a `timeout`, and
    /// a tool named in its server's `toolTimeouts`, has its own.
    pub call_timeout: Duration,
    /// The MCP client sessions toolweave serves, which decides what upstream servers are told
    /// it supports (elicitation, sampling, roots).
    pub client_sessions: ClientSessions,
}

impl Default for Options {
    /// The command line's defaults: 30 s each; no client sessions.
    fn default() -> Self {
        Self {
            startup_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(30),
            client_sessions: ClientSessions::None,
        }
    }
}
