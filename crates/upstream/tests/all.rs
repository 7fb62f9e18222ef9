//! The upstream crate's integration tests, in one binary: the manager against real server
//! processes (`suite/manager.rs`), remote servers over HTTP (`suite/remote.rs`), and servers
//! that send what does not parse (`suite/faults.rs`).
//!
//! They need the fixture binary of `toolweave-testkit` built (`cargo build -p
//! toolweave-testkit`); `fixture_binary()` says so when it is missing.

#![allow(
    clippy::too_many_lines,
    reason = "a test reads top to bottom as one scenario"
)]
#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail loudly on the first unexpected error"
)]

mod suite;
