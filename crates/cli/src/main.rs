//! The `toolweave` binary: parse the command line, run one command — or, started as a worker,
//! run one guest program for a gateway.

#![cfg_attr(
    test,
    allow(
        clippy::too_many_lines,
        reason = "a test reads top to bottom as one scenario"
    )
)]

mod approve;
mod box_offer;
mod cli;
mod live;
mod login;
mod machine;
mod pins;
mod printed;
mod prompt;
mod rules;
mod setup;

use std::process::ExitCode;

/// Counts live bytes for the whole process. Unarmed it only counts; a worker arms it with its
/// guest's memory limit, and past that the worker ends with a status the gateway reports as the
/// memory limit.
#[global_allocator]
static ALLOCATOR: toolweave_core::WorkerAllocator = toolweave_core::WorkerAllocator;

fn main() -> ExitCode {
    // Started as a worker, this binary runs one guest program for a gateway.
    if let Some(code) = toolweave_core::run_worker_if_asked() {
        return code;
    }
    cli::main()
}
