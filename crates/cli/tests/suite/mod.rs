mod approval;
mod approval_page;
mod audit;
mod balance;
mod cancel;
mod cases;
mod cli;
mod confinement;
mod conformance;
mod emit;
mod failures;
mod http;
mod identities;
mod notices;
mod npm;
mod oauth;
mod observe;
mod pins;
mod policy;
mod protocol;
mod requests;
mod results;
mod runner;
mod session_state;
mod setup;
mod shapes;
mod tiers;
mod upstreams;
mod waits;
mod worker_protocol;

use std::path::{Path, PathBuf};

pub use toolweave_testkit::harness::{cpu_ticks, worker_processes};

/// The binary under test.
pub fn toolweave() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_toolweave"))
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A program on the `PATH`, when there is one.
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|folder| folder.join(program))
            .find(|candidate| candidate.is_file())
    })
}
