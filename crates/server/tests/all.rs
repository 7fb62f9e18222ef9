//! The server crate's integration tests, one binary: a `ToolweaveServer` over in-memory pipes,
//! driven by an rmcp client, with no process of toolweave's own.

#![expect(
    clippy::expect_used,
    reason = "a test stops at what it cannot go on without"
)]

mod suite;
