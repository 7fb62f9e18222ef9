//! Pictures and audio from code, and live progress and console lines, driven by the official
//! Python SDK over stdio and HTTP with worker isolation (`tests/python/sdk_emit.py`).

use toolweave_testkit::harness::fixture_config;
use toolweave_testkit::skip::missing_prerequisite;

use super::{repo_root, toolweave};

/// An image a tool returns arrives as an `ImageContent` with the same bytes; `emit` of an image
/// and an audio block arrive after the text in both languages; the block past
/// `--max-emitted-blocks` gets an error naming the flag; `progress(i, n)` of a 3-second
/// execution reaches the client's progress callback while it runs, rising, the last `n` of `n`;
/// console lines reach its logging callback while it runs when it gave no progress token.
#[test]
fn blocks_progress_and_console_lines_reach_the_client() {
    let python = std::env::var_os("TOOLWEAVE_TEST_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/venv/bin/python"));
    if !python.exists() {
        missing_prerequisite(
            "sdk_emit.py",
            &format!(
                "{} not found (run .ci/run, or set TOOLWEAVE_TEST_PYTHON to a python with `mcp` installed)",
                python.display()
            ),
        );
        return;
    }
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let output = std::process::Command::new(&python)
        .arg(repo_root().join("tests/python/sdk_emit.py"))
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
    assert!(stdout.contains("sdk_emit: ok"), "{stdout}");
}
