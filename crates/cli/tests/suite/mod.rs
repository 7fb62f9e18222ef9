mod approval;
mod audit;
mod cancel;
mod cases;
mod cli;
mod confinement;
mod conformance;
mod failures;
mod http;
mod notices;
mod npm;
mod oauth;
mod policy;
mod protocol;
mod results;
mod setup;
mod waits;

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
