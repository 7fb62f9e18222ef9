//! End-to-end tests: the real `toolweave` binary over stdio, driven by an MCP client, with the
//! fixture server (and, where installed, the official npm servers) as upstreams.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail loudly on the first unexpected error"
)]

mod suite;
