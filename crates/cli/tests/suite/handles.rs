//! A call that needs a person, from a client that cannot be asked, answers early saying where the
//! person approves and how to pick the answer up; and state without a protocol session, through
//! a session handle. Driven by the official Python SDK in both its modes
//! (`tests/python/sdk_handles.py`): its default (MCP 2026-07-28) against `serve --http`, and
//! `mode="legacy"` against `serve --http --stateless`; over stdio for the early answer.

use toolweave_testkit::harness::fixture_config;

use super::run_sdk_script;

fn run_in(mode: &str) {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    run_sdk_script("sdk_handles", &[config.as_os_str(), mode.as_ref()]);
}

/// MCP 2026-07-28: every request stands alone over HTTP, so the session is the handle.
#[test]
fn the_python_sdk_in_its_default_mode() {
    run_in("default");
}

/// MCP 2025-11-25 against `--stateless`: no session either, so the same handle.
#[test]
fn the_python_sdk_in_legacy_mode_against_stateless() {
    run_in("legacy");
}
