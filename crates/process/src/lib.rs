//! The process boundary: both sides of it, and what confines the processes beyond it.
//!
//! A worker is the `toolweave` binary started again with a worker argument (`worker_entry.rs`);
//! it runs one guest program in an engine of `toolweave-sandbox` and exits. Its side is the
//! worker's loop and the messages it exchanges with the host over pipes (`worker.rs`:
//! [`ToWorker`], [`FromEngine`]), and, on Linux, the fork server that forks warmed workers
//! (`fork_server.rs`). The host's side starts workers ahead of demand and drives one per
//! execution (`workers.rs`: [`WorkerPool`], [`WorkerExecution`]), through the fork server when one
//! runs (`fork_client.rs`).
//! A worker confines itself before it reads any guest code ([`confine`], whose seccomp filter is
//! compiled by `confine/bpf.rs`); a stdio upstream server runs in a box of its own
//! ([`server_box`]).

#![cfg_attr(
    test,
    allow(
        clippy::too_many_lines,
        reason = "a test reads top to bottom as one scenario"
    )
)]

pub mod confine;
#[cfg(target_os = "linux")]
mod fork_client;
#[cfg(target_os = "linux")]
mod fork_server;
pub mod server_box;
mod worker;
mod worker_entry;
mod workers;

pub use worker::{
    FromEngine, MEMORY_EXIT_CODE, PROTOCOL_VERSION, ToWorker, WorkerCommand, WorkerJob, WorkerKind,
    WorkerSpec, worker_main,
};
pub use worker_entry::{
    CONFINEMENT_CHECK_ARGUMENT, WORKER_ARGUMENT, run_worker_if_asked, worker_command,
};
pub use workers::{
    KEPT_FOR, MAX_KEPT_BUSY, MAX_KEPT_EXECUTIONS, SessionKey, WorkerExecution, WorkerPool,
};

/// How much of one line a child process (a worker, a fork server, a runner) writes to stderr is
/// kept; the rest is cut.
pub const STDERR_LINE_BYTES: usize = 4096;

/// Reads what a child process writes to stderr to its end and hands `each` one line at a time,
/// cut to [`STDERR_LINE_BYTES`] (and marked so) when longer: however the process writes, what is
/// held is a line and one read.
pub async fn for_each_stderr_line(
    stderr: impl tokio::io::AsyncRead + Unpin,
    each: impl FnMut(&str),
) {
    // A stderr that cannot be read further has nothing more to say.
    let _ =
        toolweave_jsonrpc::reader::for_each_line(stderr, STDERR_LINE_BYTES, "… (cut)", each).await;
}

/// The global allocator a program that starts worker processes declares: in a worker it holds
/// the guest's memory limit (armed by the worker before the guest runs), and elsewhere it only
/// counts.
pub use monty_alloc::LimitedAllocator as WorkerAllocator;
