//! Guest programs under `tests/cases/` (`js/`, `ts/`, `py/`), each with its expected outcome
//! written in the file (see `toolweave_testkit::cases` for the markers), run in both isolation
//! modes and on a runner. Hostile programs live in `tests/hostile/` and run in the hostile corpus
//! (`tests/hostile.rs`).
//!
//! Files named `mistake__*` are the mistakes models make, each asserting that the answer names
//! the cause and the fix.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use toolweave_testkit::cases::{self, CASE_LIMITS, Case};
use toolweave_testkit::harness::{Toolweave, fixture_config};

use super::{repo_root, toolweave};

/// The servers every case can call.
const CASE_SERVERS: [&str; 3] = ["alpha", "beta", "fixture"];
/// How long the servers of a starting gateway take to start: long enough that a case (and the
/// probe before it) begins while they start on a loaded machine; each case waits that long.
const START_DELAY: Duration = Duration::from_millis(1000);
/// Starting gateways running at once.
const STARTING_GATEWAYS_AT_ONCE: usize = 3;

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

/// The same cases run by a `toolweave runner`, which the gateway starts as a command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_cases_on_a_runner() {
    guest_cases("runner").await;
}

/// Runs every case where `place` says: `worker` or `in-process` (isolation modes), or
/// `runner`.
async fn guest_cases(place: &str) {
    let (_dir, config) = fixture_config(&CASE_SERVERS).unwrap();
    let mut arguments = CASE_LIMITS.to_vec();
    let runner = format!("{} runner", toolweave().display());
    match place {
        "runner" => arguments.extend(["--runner", runner.as_str()]),
        isolation => arguments.extend(["--isolation", isolation]),
    }
    let server = Toolweave::start(toolweave(), &config, &arguments)
        .await
        .unwrap();
    let files = case_files();
    let named = |prefix: &str| {
        files
            .iter()
            .filter(|path| {
                path.file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with(prefix))
            })
            .count()
    };
    let mistakes = named("mistake__");
    assert!(
        mistakes >= 60,
        "expected the corpus of model mistakes (mistake__*), found {mistakes} files"
    );
    assert!(
        files.len() >= 30,
        "expected the case files, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        failures.extend(run_case(&server, path).await);
    }
    server.stop().await.unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed ({place}):\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// The cases marked `also-while-starting`, each on a gateway of its own whose servers take
/// [`START_DELAY`] to start: a probe checks that they are still starting, then the case runs and
/// meets the same expectations as with every server ready. Code runs in workers, the default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_cases_while_servers_start() {
    let files: Vec<PathBuf> = case_files()
        .into_iter()
        .filter(|path| Case::read(path).unwrap().expected.while_starting)
        .collect();
    assert!(
        files.len() >= 10,
        "expected the name cases marked also-while-starting, found {}",
        files.len()
    );
    let failures: Vec<String> = futures::stream::iter(&files)
        .map(|path| async move {
            let (_dir, config) = starting_config().unwrap();
            let server = Toolweave::start(toolweave(), &config, CASE_LIMITS)
                .await
                .unwrap();
            // A starting server's namespace lists no tools yet.
            let probe = server
                .execute("return Object.keys(tools.fixture).length", "javascript")
                .await
                .unwrap();
            let mut failures = if probe.value().ok() == Some(&json!(0)) {
                run_case(&server, path).await
            } else {
                vec![format!(
                    "{}: the servers were ready before the case began ({}); raise START_DELAY",
                    path.display(),
                    probe.text
                )]
            };
            if let Err(error) = server.stop().await {
                failures.push(format!(
                    "{}: the gateway did not stop: {error}",
                    path.display()
                ));
            }
            failures
                .into_iter()
                .map(|failure| format!("while starting: {failure}"))
        })
        .buffer_unordered(STARTING_GATEWAYS_AT_ONCE)
        .flat_map(futures::stream::iter)
        .collect()
        .await;
    assert!(
        failures.is_empty(),
        "{} of {} cases failed while the servers started:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// A config of [`CASE_SERVERS`], each fixture server starting [`START_DELAY`] late.
fn starting_config() -> anyhow::Result<(tempfile::TempDir, PathBuf)> {
    let (dir, path) = fixture_config(&CASE_SERVERS)?;
    let mut config: Value = serde_json::from_slice(&std::fs::read(&path)?)?;
    let delay = START_DELAY.as_millis().to_string();
    for server in config["mcpServers"]
        .as_object_mut()
        .into_iter()
        .flat_map(|servers| servers.values_mut())
    {
        if let Some(arguments) = server["args"].as_array_mut() {
            arguments.extend([json!("--start-delay-ms"), json!(delay)]);
        }
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&config)?)?;
    Ok((dir, path))
}

/// Runs one case file on `server`; what went wrong, as one failure line (none when it passed, or
/// when it is pending and failed as expected).
async fn run_case(server: &Toolweave, path: &Path) -> Vec<String> {
    check_case(server, Case::read(path).unwrap()).await
}

/// Runs `case` on `server`; what went wrong, as [`run_case`] says.
pub(super) async fn check_case(server: &Toolweave, case: Case) -> Vec<String> {
    let path = case.path.as_path();
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
    if after.value().ok() != Some(&json!("still serving")) {
        problems.push(format!("the next execution failed: {}", after.text));
    }
    match (&case.expected.pending, problems.is_empty()) {
        (None, true) => Vec::new(),
        (None, false) => vec![format!("{name}:\n  {}", problems.join("\n  "))],
        (Some(why), false) => {
            toolweave_testkit::skip::pending(
                &name,
                &format!("{why}:\n  {}", problems.join("\n  ")),
            );
            Vec::new()
        }
        (Some(why), true) => vec![format!(
            "{name}: passes now; remove its `pending: {why}` marker"
        )],
    }
}
