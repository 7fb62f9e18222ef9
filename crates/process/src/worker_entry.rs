//! The program a gateway starts as its worker processes: the running program itself, re-entered
//! with [`WORKER_ARGUMENT`]. Its `main` begins with [`run_worker_if_asked`], which runs the
//! worker (or the fork server that forks workers) and never returns to the program's own work.

use std::ffi::OsString;
use std::process::ExitCode;

use crate::{WorkerCommand, WorkerSpec, worker_main};

/// The first argument that makes the program a worker process.
pub const WORKER_ARGUMENT: &str = "__toolweave-worker";

/// The argument after [`WORKER_ARGUMENT`] that makes the program a fork server of workers.
pub(crate) const FORK_SERVER_ARGUMENT: &str = "fork-server";

/// The argument after [`WORKER_ARGUMENT`] that makes the program confine itself, try what an
/// escaped guest would try, and print what happened as JSON (what `toolweave doctor` and the
/// confinement tests run).
pub const CONFINEMENT_CHECK_ARGUMENT: &str = "confinement-check";

/// When the program was started as a worker (its first argument is [`WORKER_ARGUMENT`]), runs
/// it and returns the status to exit with; `None` otherwise, when the program goes on.
///
/// Call it first in `main`, before a runtime or anything else starts: a worker confines
/// itself while it is the only thread. The program should use
/// [`WorkerAllocator`](crate::WorkerAllocator) as its global allocator, which holds Python's
/// memory limit in the worker.
#[must_use]
pub fn run_worker_if_asked() -> Option<ExitCode> {
    let mut arguments = std::env::args_os().skip(1);
    if arguments.next()? != WORKER_ARGUMENT {
        return None;
    }
    let arguments: Vec<String> = arguments
        .map(|argument| argument.to_string_lossy().into_owned())
        .collect();
    Some(run_worker(&arguments))
}

#[allow(clippy::print_stdout, clippy::print_stderr)]
fn run_worker(arguments: &[String]) -> ExitCode {
    match arguments.first().map(String::as_str) {
        Some(CONFINEMENT_CHECK_ARGUMENT) => {
            // Stdout is this entry's only output; the filter allows writing it.
            println!("{}", crate::confine::self_check());
            return ExitCode::SUCCESS;
        }
        #[cfg(target_os = "linux")]
        Some(FORK_SERVER_ARGUMENT) => {
            return match WorkerSpec::parse(&arguments[1..]) {
                Ok(spec) => crate::fork_server::fork_server_main(spec),
                Err(error) => refuse(&error),
            };
        }
        _ => {}
    }
    match WorkerSpec::parse(arguments) {
        Ok(spec) => worker_main(spec),
        Err(error) => refuse(&error),
    }
}

#[allow(clippy::print_stderr)]
fn refuse(error: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("{WORKER_ARGUMENT}: {error}");
    ExitCode::from(2)
}

/// This program, re-entered as a worker: its own executable with [`WORKER_ARGUMENT`], an empty
/// environment but for `TOOLWEAVE_LOG` (the worker's log filter).
///
/// # Errors
///
/// When the running program's executable cannot be found.
pub fn worker_command() -> std::io::Result<WorkerCommand> {
    let program = std::env::current_exe()?;
    let env = std::env::var_os("TOOLWEAVE_LOG")
        .map(|filter| vec![(OsString::from("TOOLWEAVE_LOG"), filter)])
        .unwrap_or_default();
    Ok(WorkerCommand {
        program,
        args: vec![WORKER_ARGUMENT.into()],
        env,
    })
}
