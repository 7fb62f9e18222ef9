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
    let mut arguments = std::env::args_os().skip(1);
    if arguments
        .next()
        .is_some_and(|argument| argument == WORKER_ARGUMENT)
    {
        let kind = arguments
            .next()
            .and_then(|kind| toolweave_core::WorkerKind::from_argument(&kind.to_string_lossy()));
        let Some(kind) = kind else {
            eprintln!("toolweave: {WORKER_ARGUMENT} needs a kind: javascript or python");
            return ExitCode::from(2);
        };
        return toolweave_core::worker_main(kind);
    }
    cli::main()
}
