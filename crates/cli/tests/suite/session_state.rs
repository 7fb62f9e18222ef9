//! What a session keeps across its executions (the store, result handles) and how one execution
//! narrows its tools and deadline, driven by the official Python SDK over stdio and HTTP with
//! worker isolation (`tests/python/sdk_session_state.py`).

use toolweave_testkit::harness::fixture_config;
use toolweave_testkit::skip::missing_prerequisite;

use super::{repo_root, toolweave};

/// A value stored in one execution is read in the next; two HTTP sessions never see each other's
/// store or handles; a 5 MB result becomes a handle read back exactly in pieces; `allowedTools`
/// keeps a call out and cannot let a denied one in; `timeoutMs` narrows and is cut to the
/// gateway's; every bound is named in its error.
#[test]
fn a_session_keeps_values_and_large_results_across_executions() {
    let python = std::env::var_os("TOOLWEAVE_TEST_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/venv/bin/python"));
    if !python.exists() {
        missing_prerequisite(
            "sdk_session_state.py",
            &format!(
                "{} not found (run .ci/run, or set TOOLWEAVE_TEST_PYTHON to a python with `mcp` installed)",
                python.display()
            ),
        );
        return;
    }
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let output = std::process::Command::new(&python)
        .arg(repo_root().join("tests/python/sdk_session_state.py"))
        .arg(toolweave())
        .arg(&config)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("sdk_session_state: ok"), "{stdout}");
}
