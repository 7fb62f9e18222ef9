//! Long calls as tasks (the MCP tasks extension): created at once, polled to completion with the
//! result of a plain call, progress in the task's status, cancelled, questions answered with
//! `tasks/update` without anything running twice, and tasks bound to the identity that started
//! them. Driven by the official Python SDK (`tests/python/sdk_tasks.py`) in its default mode (MCP
//! 2026-07-28, over stdio and HTTP) through a client extension and the SDK's `send_request`, since
//! the SDK has no client methods for tasks; and in `mode="legacy"` (MCP 2025-11-25), where the
//! script sends the JSON-RPC of 2025-11-25 tasks itself and checks that none is made.

use toolweave_testkit::harness::fixture_config;

use super::run_sdk_script;

fn run_in(mode: &str) {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    run_sdk_script("sdk_tasks", &[config.as_os_str(), mode.as_ref()]);
}

/// MCP 2026-07-28: executions as tasks, over stdio and HTTP.
#[test]
fn the_python_sdk_in_its_default_mode() {
    run_in("default");
}

/// MCP 2025-11-25: a call that asks for a task is answered with its result.
#[test]
fn the_python_sdk_in_legacy_mode() {
    run_in("legacy");
}
