//! Guest programs under `tests/cases/` (`js/`, `ts/`, `py/`), each with its expected outcome
//! written in the file (see `toolweave_testkit::cases`), run in both isolation modes. Hostile
//! programs live in `tests/hostile/` and run in the hostile corpus (`tests/hostile.rs`).

use std::path::PathBuf;

use toolweave_testkit::cases::{self, Case};
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

fn case_files() -> Vec<PathBuf> {
    let root = repo_root().join("tests/cases");
    cases::files_in(&["js", "ts", "py"].map(|folder| root.join(folder))).unwrap()
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
    assert!(
        files.len() >= 30,
        "expected the case files, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        let case = Case::read(path).unwrap();
        let language = case.language;
        let name = path
            .strip_prefix(repo_root())
            .unwrap_or(path)
            .display()
            .to_string();
        let execution = server.execute(&case.code, language).await.unwrap();
        let mut problems = case.problems(&execution);
        // After every case, limits included, the next execution must work.
        let next = match language {
            "python" => "'still serving'",
            _ => "return 'still serving'",
        };
        let after = server.execute(next, language).await.unwrap();
        if after.value().ok() != Some(&serde_json::json!("still serving")) {
            problems.push(format!("the next execution failed: {}", after.text));
        }
        match (&case.expected.pending, problems.is_empty()) {
            (None, true) => {}
            (None, false) => failures.push(format!("{name}:\n  {}", problems.join("\n  "))),
            (Some(why), false) => eprintln!(
                "PENDING {name} (known not to pass yet: {why}):\n  {}",
                problems.join("\n  ")
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
