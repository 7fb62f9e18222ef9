//! End-to-end tests: the real `toolweave` binary over stdio, driven by an MCP client, with the
//! fixture server (and, where installed, the official npm servers) as upstreams.

#![allow(
    clippy::too_many_lines,
    reason = "a test reads top to bottom as one scenario"
)]
#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail loudly on the first unexpected error"
)]

mod suite;
