//! The `toolweave` binary: parse the command line, run one command — or, started as a worker,
//! run one guest program for a gateway.

mod cli;

use std::process::ExitCode;

/// The first argument that makes this binary a worker process (see `toolweave_sandbox::worker`).
pub(crate) const WORKER_ARGUMENT: &str = "__toolweave-worker";

/// Counts live bytes for the whole process. Unarmed it only counts; a worker arms it with its
/// guest's memory limit, and past that the worker ends with a status the gateway reports as the
/// memory limit.
#[global_allocator]
static ALLOCATOR: monty_alloc::LimitedAllocator = monty_alloc::LimitedAllocator;

fn main() -> ExitCode {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|argument| argument == WORKER_ARGUMENT)
    {
        return toolweave_core::worker_main();
    }
    cli::main()
}
