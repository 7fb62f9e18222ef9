//! Guest programs under `tests/cases/` (`js/`, `ts/`, `py/`), each with its expected outcome
//! written in the file, in comments (`//` in JavaScript and TypeScript, `#` in Python):
//!
//! - `expect: <JSON>`: the result, compared as a whole;
//! - `expect-error: <kind>`: the execution fails with this kind (`Timeout`, `GuestError`, ...);
//! - `expect-message: <text>`: the error text contains this (repeatable);
//! - `expect-logs: <JSON array>`: the console lines, compared as a whole;
//! - `pending: <why>`: the case is known not to pass yet. Its failure is reported, loudly, but
//!   does not fail the suite; once it passes, the suite fails until the marker is removed.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolweave_testkit::harness::{Toolweave, fixture_config};

use super::{repo_root, toolweave};

/// Limits the cases are written against.
const CASE_LIMITS: &[&str] = &[
    "--timeout-ms",
    "1500",
    "--memory-mb",
    "32",
    "--max-log-bytes",
    "65536",
    "--max-result-bytes",
    "1048576",
    "--max-tool-calls",
    "50",
];

#[derive(Debug, Default)]
struct Expectation {
    value: Option<Value>,
    error_kind: Option<String>,
    messages: Vec<String>,
    logs: Option<Value>,
    pending: Option<String>,
}

fn expectation(path: &Path, code: &str) -> Expectation {
    let marker = match path.extension().and_then(|e| e.to_str()) {
        Some("py") => "#",
        _ => "//",
    };
    let mut expected = Expectation::default();
    for line in code.lines() {
        let Some(comment) = line.trim().strip_prefix(marker) else {
            continue;
        };
        let comment = comment.trim();
        let parse = |text: &str| -> Value {
            serde_json::from_str(text).unwrap_or_else(|e| {
                panic!("{}: bad JSON in expectation {text:?}: {e}", path.display())
            })
        };
        if let Some(json) = comment.strip_prefix("expect:") {
            expected.value = Some(parse(json.trim()));
        } else if let Some(kind) = comment.strip_prefix("expect-error:") {
            expected.error_kind = Some(kind.trim().to_owned());
        } else if let Some(message) = comment.strip_prefix("expect-message:") {
            expected.messages.push(message.trim().to_owned());
        } else if let Some(json) = comment.strip_prefix("expect-logs:") {
            expected.logs = Some(parse(json.trim()));
        } else if let Some(why) = comment.strip_prefix("pending:") {
            expected.pending = Some(why.trim().to_owned());
        }
    }
    assert!(
        expected.value.is_some() != expected.error_kind.is_some(),
        "{}: a case needs exactly one of `expect:` and `expect-error:`",
        path.display()
    );
    expected
}

fn case_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for folder in ["js", "ts", "py"] {
        let dir = repo_root().join("tests/cases").join(folder);
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            files.push(entry.unwrap().path());
        }
    }
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_cases_in_workers() {
    guest_cases("worker").await;
}

/// The same cases with JavaScript and TypeScript on the gateway's own engine threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_cases_in_process() {
    guest_cases("in-process").await;
}

async fn guest_cases(isolation: &str) {
    let (_dir, config) = fixture_config(&["alpha", "beta", "fixture"]).unwrap();
    let mut arguments = CASE_LIMITS.to_vec();
    arguments.extend(["--isolation", isolation]);
    let server = Toolweave::start(toolweave(), &config, &arguments)
        .await
        .unwrap();
    let files = case_files();
    let hostile = files
        .iter()
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("hostile__"))
        })
        .count();
    assert!(
        hostile >= 60,
        "expected the hostile-code suite (hostile__*), found {hostile} files"
    );
    assert!(
        files.len() >= 30,
        "expected the case files, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        let code = std::fs::read_to_string(path).unwrap();
        let expected = expectation(path, &code);
        let language = match path.extension().and_then(|e| e.to_str()) {
            Some("ts") => "typescript",
            Some("py") => "python",
            _ => "javascript",
        };
        let name = path
            .strip_prefix(repo_root())
            .unwrap_or(path)
            .display()
            .to_string();
        let execution = server.execute(&code, language).await.unwrap();
        let mut problems = Vec::new();
        if let Some(value) = &expected.value {
            if execution.is_error {
                problems.push(format!("failed: {}", execution.text));
            } else if &execution.structured["result"] != value {
                problems.push(format!(
                    "result {} != expected {value}",
                    execution.structured["result"]
                ));
            }
        }
        if let Some(kind) = &expected.error_kind {
            if !execution.is_error {
                problems.push(format!(
                    "succeeded with {}, expected {kind}",
                    execution.text
                ));
            } else if execution.error_kind() != Some(kind.as_str()) {
                problems.push(format!(
                    "error kind {:?} != {kind}: {}",
                    execution.error_kind(),
                    execution.text
                ));
            }
        }
        for message in &expected.messages {
            if !execution.text.contains(message.as_str()) {
                problems.push(format!("text lacks {message:?}: {}", execution.text));
            }
        }
        if let Some(logs) = &expected.logs {
            let actual: Vec<String> = execution.structured["logs"]
                .as_array()
                .map(|lines| {
                    lines
                        .iter()
                        .map(|line| {
                            let text = line["text"].as_str().unwrap_or_default();
                            match line["stream"].as_str() {
                                Some("log") | None => text.to_owned(),
                                Some(stream) => format!("[{stream}] {text}"),
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            if &serde_json::json!(actual) != logs {
                problems.push(format!("logs {actual:?} != expected {logs}"));
            }
        }
        // After every case, limits included, the next execution must work.
        let next = match language {
            "python" => "'still serving'",
            _ => "return 'still serving'",
        };
        let after = server.execute(next, language).await.unwrap();
        if after.value().ok() != Some(&serde_json::json!("still serving")) {
            problems.push(format!("the next execution failed: {}", after.text));
        }
        match (&expected.pending, problems.is_empty()) {
            (None, true) => {}
            (None, false) => failures.push(format!("{name}:\n  {}", problems.join("\n  "))),
            (Some(why), false) => toolweave_testkit::skip::pending(
                &name,
                &format!("{why}:\n  {}", problems.join("\n  ")),
            ),
            (Some(why), true) => failures.push(format!(
                "{name}: passes now; remove its `pending: {why}` marker"
            )),
        }
    }
    server.stop().await.unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed ({isolation}):\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}
