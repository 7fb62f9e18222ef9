mod approval;
mod approval_page;
mod approval_url;
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
mod llm;
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

/// The Python with the official MCP SDK that `.ci/run` installs (`TOOLWEAVE_TEST_PYTHON`, else
/// `target/venv`), or why there is none.
pub fn sdk_python() -> Result<PathBuf, String> {
    let python = std::env::var_os("TOOLWEAVE_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/venv/bin/python"));
    if python.exists() {
        Ok(python)
    } else {
        Err(format!(
            "{} not found (run .ci/run, or set TOOLWEAVE_TEST_PYTHON to a python with `mcp` installed)",
            python.display()
        ))
    }
}

/// Runs `tests/python/<script>.py` with the official Python SDK against this toolweave binary
/// and `args` (the script's own, after the binary), and checks it succeeded and printed
/// `<script>: ok`. Skipped, loudly, where the SDK is missing (never in CI).
pub fn run_sdk_script(script: &str, args: &[&std::ffi::OsStr]) {
    let python = match sdk_python() {
        Ok(python) => python,
        Err(why) => {
            toolweave_testkit::skip::missing_prerequisite(&format!("{script}.py"), &why);
            return;
        }
    };
    let output = std::process::Command::new(&python)
        .arg(
            repo_root()
                .join("tests/python")
                .join(format!("{script}.py")),
        )
        .arg(toolweave())
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", python.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains(&format!("{script}: ok")), "{stdout}");
}

/// A program on the `PATH`, when there is one.
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|folder| folder.join(program))
            .find(|candidate| candidate.is_file())
    })
}
