//! The `toolweave` binary: parse the command line, run one command — or, started as a worker,
//! run one guest program for a gateway.

mod cli;
mod login;
mod setup;

use std::process::ExitCode;

/// The first argument that makes this binary a worker process (see `toolweave_sandbox::worker`).
pub(crate) const WORKER_ARGUMENT: &str = "__toolweave-worker";

/// The worker entry that confines itself, tries what an escaped guest would try, and prints what
/// happened as JSON: the confinement tests run it.
pub(crate) const CONFINEMENT_CHECK: &str = "confinement-check";

#[allow(clippy::print_stdout)]
fn confinement_check() -> ExitCode {
    // Stdout is this entry's only output; the filter allows writing it.
    println!("{}", toolweave_core::confine::self_check());
    ExitCode::SUCCESS
}

/// The worker entry that is a fork server for workers (see `toolweave_sandbox::zygote`).
pub(crate) const FORK_SERVER: &str = "zygote";

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
        let arguments: Vec<String> = arguments
            .map(|argument| argument.to_string_lossy().into_owned())
            .collect();
        if arguments.first().map(String::as_str) == Some(CONFINEMENT_CHECK) {
            return confinement_check();
        }
        let fork_server = arguments.first().map(String::as_str) == Some(FORK_SERVER);
        let spec = if fork_server {
            &arguments[1..]
        } else {
            &arguments[..]
        };
        return match toolweave_core::WorkerSpec::parse(spec) {
            #[cfg(target_os = "linux")]
            Ok(spec) if fork_server => toolweave_core::zygote::zygote_main(spec),
            Ok(spec) => toolweave_core::worker_main(spec),
            Err(error) => {
                eprintln!("toolweave: {WORKER_ARGUMENT}: {error}");
                ExitCode::from(2)
            }
        };
    }
    cli::main()
}
