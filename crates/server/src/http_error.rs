//! Why serving over HTTP (MCP, or metrics on an address of their own) could not begin.

use std::net::SocketAddr;

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
