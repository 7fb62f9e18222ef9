//! What a session keeps across its executions (the store, result handles) and how one execution
//! narrows its tools and deadline, driven by the official Python SDK over stdio and HTTP with
//! worker isolation (`tests/python/sdk_session_state.py`).

use toolweave_testkit::harness::fixture_config;

use super::run_sdk_script;

/// A value stored in one execution is read in the next; two HTTP sessions never see each other's
/// store or handles; a 5 MB result becomes a handle read back exactly in pieces; `allowedTools`
/// keeps a call out and cannot let a denied one in; `timeoutMs` narrows and is cut to the
/// gateway's; every bound is named in its error.
#[test]
fn a_session_keeps_values_and_large_results_across_executions() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    run_sdk_script("sdk_session_state", &[config.as_os_str()]);
}
