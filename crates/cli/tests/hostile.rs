//! The hostile corpus: what a guest, an upstream server or a client can send to make the gateway
//! stall or fall over, each case with the outcome it must get. Every case runs against the real
//! binary, in both isolation modes, under a 2 GiB address-space limit on the gateway
//! (`RLIMIT_AS`: an allocation past it aborts the process), while a probe (another client's
//! executions, one every 20 ms) measures how long the other executions waited; after each case
//! the gateway must answer the next request within a bound.
//!
//! - guest programs: `tests/hostile/guest/{js,ts,py}/`, written as the guest cases are
//!   (`toolweave_testkit::cases`);
//! - programs against faulty upstream servers (the fixture's `--faults`, on stdio, streamable
//!   HTTP with either framing, and legacy SSE): `tests/hostile/upstream/`;
//! - what a client sends over stdio and HTTP, and many executions at once: the tables in
//!   `corpus/protocol.rs` and `corpus/load.rs`.
//!
//! A test binary of its own, and its tests one at a time ([`serial`]): cargo runs test binaries
//! one after another, so the probe measures this corpus, not the rest of the suite beside it.

#![allow(
    clippy::too_many_lines,
    reason = "a test reads top to bottom as one scenario"
)]
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on the first unexpected error"
)]

mod corpus;
