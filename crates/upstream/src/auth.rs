//! OAuth 2.1 for remote servers (streamable HTTP and SSE), as the MCP authorization specification
//! describes it, on rmcp's `auth` support: rmcp discovers the authorization server, selects scopes,
//! makes the authorization URL (PKCE, `state`, resource indicator), exchanges the code and renews
//! tokens; toolweave chooses the client and its token endpoint authentication, keeps the logins
//! (`store.rs`), hands each request its token and renews it one at a time (`authorization.rs`),
//! and runs `toolweave login` / `logout` (`login.rs`, with the browser's return in
//! `callback.rs`). What rmcp leaves to its caller, toolweave adds: the token endpoint
//! authentication a registration or the entry's secret calls for (rmcp registers every client as
//! public, and keeps no secret), keeping a login across processes with renewal coordinated
//! between them, step-up from a challenge a call met with a limit on authorizations, revocation
//! at logout, and the loopback listener.
//!
//! A server whose entry sends its own `Authorization` header is left alone: its credentials are
//! the config's. Tokens live in the login files and in requests' headers only: no message or log
//! line holds one, and guest code never sees one.

mod authorization;
mod callback;
mod http;
mod login;
mod store;

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use rmcp::transport::auth::{AuthError, ProtectedResourceMetadataInvalidReason};
use toolweave_config::ServerConfig;

pub(crate) use authorization::Authorization;
pub use store::{Logins, StoreError};

/// How `toolweave login` goes about it.
pub struct LoginOptions<'a> {
    /// How long the person may take in the browser.
    pub timeout: Duration,
    /// How long the server may take to answer when toolweave connects to it, before and after.
    pub startup_timeout: Duration,
    /// Called with each authorization URL: print it, and open a browser where there is one.
    pub open: &'a mut dyn FnMut(&str),
}

impl std::fmt::Debug for LoginOptions<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LoginOptions")
            .field("timeout", &self.timeout)
            .field("startup_timeout", &self.startup_timeout)
            .finish_non_exhaustive()
    }
}

/// How a login ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginOutcome {
    /// Logged in; the server then listed this many tools.
    LoggedIn {
        /// The tools the server listed with the new login.
        tools: usize,
        /// The scopes granted.
        scopes: Vec<String>,
        /// When the access token expires, when the server said (it is renewed before).
        expires_at: Option<SystemTime>,
    },
    /// The server took toolweave without a login and names no authorization server.
    NotNeeded {
        /// The tools it listed.
        tools: usize,
    },
}

/// How a logout ended (the login is forgotten in every case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogoutOutcome {
    /// The authorization server revoked the token.
    Revoked,
    /// The authorization server takes no revocations.
    NoRevocation,
    /// Revoking failed, for this reason.
    NotRevoked(String),
    /// There was no login.
    NotLoggedIn,
}

/// What toolweave keeps for a server, without connecting to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginStatus {
    /// A stdio server, or a remote one whose entry sends its own `Authorization` header.
    NotUsed,
    /// No login is kept (the server may need none).
    None,
    /// A login is kept.
    LoggedIn {
        /// When the access token expires, when the server said.
        expires_at: Option<SystemTime>,
        /// Whether toolweave can renew it without the person (it has a refresh token).
        renewable: bool,
        /// The scopes granted.
        scopes: Vec<String>,
        /// The authorization server's issuer.
        authorization_server: String,
        /// Whether the server has since asked for more than it grants.
        asks_for_more: bool,
    },
    /// The login file cannot be read.
    Unreadable(StoreError),
}

impl LoginStatus {
    /// One line for people: `logged in, expires 2026-01-02 15:04 UTC (renewed before)`.
    pub fn describe(&self) -> Option<String> {
        match self {
            Self::NotUsed => None,
            Self::None => Some("not logged in".to_owned()),
            Self::LoggedIn {
                expires_at,
                renewable,
                asks_for_more,
                ..
            } => {
                let mut line = "logged in".to_owned();
                match (expires_at, renewable) {
                    (Some(at), true) => line.push_str(&format!(
                        ", token expires {}, renewed on use",
                        login::format_time(*at)
                    )),
                    (Some(at), false) if *at <= SystemTime::now() => line.push_str(&format!(
                        ", token expired {} and cannot be renewed",
                        login::format_time(*at)
                    )),
                    (Some(at), false) => line.push_str(&format!(
                        ", token expires {} and cannot be renewed",
                        login::format_time(*at)
                    )),
                    (None, _) => {}
                }
                if *asks_for_more {
                    line.push_str("; the server asked for more access since");
                }
                Some(line)
            }
            Self::Unreadable(error) => Some(format!("login unreadable: {error}")),
        }
    }
}

/// Why `toolweave login` or `logout` failed, for the person at the terminal.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LoginError {
    /// The server is a stdio server.
    #[error(
        "server \"{server}\" is a stdio server: it takes its credentials from \"env\" in its entry, not from a login"
    )]
    NotRemote {
        /// The server's name.
        server: String,
    },
    /// The entry sends its own `Authorization` header.
    #[error(
        "server \"{server}\" sends its own \"Authorization\" header (\"headers\" in {}); toolweave logs in only to servers without one: remove the header to log in",
        file.display()
    )]
    OwnHeader {
        /// The server's name.
        server: String,
        /// The config file of its entry.
        file: PathBuf,
    },
    /// There is nowhere to keep logins.
    #[error(
        "toolweave has no directory to keep logins in: set HOME (or XDG_CONFIG_HOME) in its environment"
    )]
    NoStore,
    /// The login file could not be read or written.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// The server could not be used, for another reason than a login.
    #[error("{0}")]
    Server(crate::Error),
    /// A step of the login failed.
    #[error("logging in to \"{server}\" failed: {cause}")]
    Failed {
        /// The server's name.
        server: String,
        /// Which step, and why.
        cause: String,
    },
    /// The server still refused after the login.
    #[error(
        "server \"{server}\" still refuses toolweave after {authorizations} login{}: {cause}; check the account and the scopes (\"oauth\": {{\"scopes\": [...]}}) with the server's operator",
        if *authorizations == 1 { "" } else { "s" }
    )]
    StillRefused {
        /// The server's name.
        server: String,
        /// How many authorizations were made.
        authorizations: usize,
        /// What it answered last.
        cause: String,
    },
}

/// A time for people: `2026-01-02 15:04 UTC`.
pub fn format_time(at: SystemTime) -> String {
    login::format_time(at)
}

/// Logs in to a remote server: connects, follows its challenge to the authorization server,
/// calls `options.open` with the URL for the person's browser, takes the code on a loopback
/// listener, keeps the tokens in `logins`, and connects again with them.
pub async fn login(
    server: &ServerConfig,
    logins: &Logins,
    options: LoginOptions<'_>,
) -> Result<LoginOutcome, LoginError> {
    login::login(server, logins, options).await
}

/// Forgets the login of a remote server, and revokes its token where the authorization server
/// takes revocations.
pub async fn logout(server: &ServerConfig, logins: &Logins) -> Result<LogoutOutcome, LoginError> {
    login::logout(server, logins).await
}

/// What toolweave keeps for a server, without connecting.
pub fn login_status(server: &ServerConfig, logins: &Logins) -> LoginStatus {
    login::login_status(server, logins)
}

/// The `error` a `WWW-Authenticate` challenge names (`insufficient_scope`, `invalid_token`).
pub(crate) fn challenge_error(header: &str) -> Option<String> {
    store::challenge_parameter(header, "error")
}

/// What an rmcp OAuth error means, without a URL's query (where a key may be).
pub(crate) fn describe_auth_error(error: &AuthError) -> String {
    match error {
        AuthError::DiscoveryRequestFailed { url, source } => {
            format!("reading {} failed: {source}", without_query(url))
        }
        AuthError::ProtectedResourceMetadataInvalid { url, reason } => match reason.as_ref() {
            ProtectedResourceMetadataInvalidReason::ResourceMismatch { permitted, .. } => format!(
                "the protected resource metadata at {} is for another resource ({}), not this server",
                without_query(url),
                without_query(permitted)
            ),
            other => format!(
                "the protected resource metadata at {} is unusable: {other}",
                without_query(url)
            ),
        },
        AuthError::HttpError(error) => crate::remote::describe_reqwest(error).cause,
        AuthError::UrlError(error) => format!("a URL in its metadata is not valid ({error})"),
        AuthError::PkceUnsupported => {
            "the authorization server does not take PKCE with S256, which the MCP specification requires".to_owned()
        }
        AuthError::InvalidScope(response_type) if response_type == "code" => {
            "the authorization server does not take the authorization code flow".to_owned()
        }
        other => other.to_string(),
    }
}

/// A URL without its query and fragment.
fn without_query(url: &reqwest::Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}
