//! Hostile guest programs (`tests/hostile/guest/`): escapes, limits, fakes, tampering, floods,
//! strings and nesting past every cap. Each must end as its file says, leave the other client's
//! executions unstalled, and leave the gateway answering.

use toolweave_testkit::cases::{self, CASE_LIMITS, Case};
use toolweave_testkit::harness::fixture_config;

use super::gateway::Gateway;
use super::{repo_root, serial};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_guest_programs_in_workers() {
    guest_programs("worker").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_guest_programs_in_process() {
    guest_programs("in-process").await;
}

/// The same programs run by a `toolweave runner` (the gateway starts it as a command): the
/// runner confines them as local workers are confined, and the gateway keeps every verdict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_guest_programs_on_a_runner() {
    guest_programs("runner").await;
}

/// How much longer than at rest another client's execution may take while a case runs on a
/// runner (see where it is used).
const RUNNER_STALL_BOUND: std::time::Duration = std::time::Duration::from_millis(250);

/// Runs every hostile guest program where `place` says: `worker`, `in-process` (isolation
/// modes) or `runner`.
async fn guest_programs(place: &str) {
    let runner = format!("{} runner", super::toolweave().display());
    let (isolation, runner) = match place {
        "runner" => ("worker", Some(runner.as_str())),
        isolation => (isolation, None),
    };
    let _serial = serial().await;
    let root = repo_root().join("tests/hostile/guest");
    let files = cases::files_in(&["js", "ts", "py"].map(|folder| root.join(folder))).unwrap();
    assert!(
        files.len() >= 150,
        "expected the hostile guest programs in {}, found {}",
        root.display(),
        files.len()
    );
    let (_dir, config) = fixture_config(&["alpha", "beta", "fixture"]).unwrap();
    let mut extra = CASE_LIMITS.to_vec();
    if let Some(runner) = runner {
        extra.extend(["--runner", runner]);
    }
    let mut gateway = Gateway::start(&config, isolation, &extra).await;
    if runner.is_some() {
        // Here the runner shares the gateway's two cores, and every console line of a case
        // crosses one more process and pipe, so a case writing 65,536 of them holds up the
        // probe's execution longer than the usual bound (by how much: docs/benchmarks.md,
        // "Figures behind choices in the code"). The stalls this corpus exists to catch last
        // seconds; a runner on a host of its own takes no core from the gateway.
        gateway.stall_bound = RUNNER_STALL_BOUND;
    }
    let mut failures = Vec::new();
    for path in &files {
        let case = Case::read(path).unwrap();
        let name = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .display()
            .to_string();
        let problems = gateway.case_problems(&case).await;
        match (&case.expected.pending, problems.is_empty()) {
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
    assert!(
        failures.is_empty(),
        "{} of {} hostile programs failed ({place}; a probe takes {:?} at rest):\n{}",
        failures.len(),
        files.len(),
        gateway.rest,
        failures.join("\n")
    );
}
