//! The `toolweave` binary: parse the command line, run one command.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
