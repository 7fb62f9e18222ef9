//! The official Python SDK client in both its modes: its default, which speaks MCP 2026-07-28
//! (capabilities on every request, no `initialize`, questions for the client as multi round-trip
//! requests), and `mode="legacy"` (MCP 2025-11-25), over stdio and HTTP
//! (`tests/python/sdk_modes.py`).

use toolweave_testkit::harness::fixture_config;

use super::run_sdk_script;

fn run_in(mode: &str) {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    run_sdk_script("sdk_modes", &[config.as_os_str(), mode.as_ref()]);
}

/// MCP 2026-07-28: the first execution starts at once; an execution's questions (llm.ask, an
/// upstream server's elicitation, sampling and roots, an approval) reach the client as rounds of
/// its `execute_code` call, which resume it where it waits; server/discover says what toolweave
/// serves.
#[test]
fn the_python_sdk_in_its_default_mode() {
    run_in("default");
}

/// MCP 2025-11-25: the same flows, the questions as requests to the client.
#[test]
fn the_python_sdk_in_legacy_mode() {
    run_in("legacy");
}
