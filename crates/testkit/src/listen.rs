//! Where a fixture server listens over HTTP (`--http ADDR`, `--sse ADDR`), and the line it writes
//! to stderr once it does, which [`RemoteFixture`](crate::fixture_http::RemoteFixture) reads. The
//! fixture and its fault mode both serve this way.

/// The start of the line a fixture server writes to stderr once it listens; the URL follows.
pub const LISTENING: &str = "toolweave-fixture listening on ";

/// Where and how a fixture server serves over HTTP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// Streamable HTTP at `http://ADDR/mcp`.
    Http(String),
    /// The legacy HTTP+SSE transport at `http://ADDR/sse`.
    Sse(String),
}
