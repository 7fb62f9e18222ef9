//! Worker isolation, tried from outside and from inside: what a confined worker can no longer do
//! (down to each flag a thread may not be started with), what the kernel reports about a worker
//! while it runs a guest, and what happens to a worker that crashes or stops answering.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolweave_core::confine::ESCAPE_ATTEMPTS;
use toolweave_testkit::harness::{
    Toolweave, fixture_config, fork_servers, parent_process, workers_with_kinds,
};
use toolweave_testkit::skip::{missing_prerequisite, not_applicable};

use super::{cpu_ticks, toolweave, worker_processes};

/// Whether this machine can confine workers at all; `test` says why it skips when it cannot.
/// Workers are confined on Linux only; a Linux kernel without seccomp is a prerequisite missing
/// (a CI machine has it).
fn confinement_supported(test: &str) -> bool {
    if !cfg!(target_os = "linux") {
        not_applicable(test, "workers are confined on Linux only");
        return false;
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if !status.contains("Seccomp:") {
        missing_prerequisite(
            test,
            "this kernel has no seccomp, so workers cannot be confined here",
        );
        return false;
    }
    true
}

/// One field of `/proc/<pid>/status`.
fn status_field(pid: u32, field: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        line.strip_prefix(field)
            .and_then(|rest| rest.strip_prefix(':'))
            .map(|value| value.trim().to_owned())
    })
}

/// A worker's seccomp mode once it is filtered ("2"), or what it is after two seconds.
async fn seccomp_mode_soon(pid: u32) -> Option<String> {
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        let mode = status_field(pid, "Seccomp");
        if mode.as_deref() == Some("2") || Instant::now() >= until {
            return mode;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The worker running a guest that spins: the first whose CPU time grows by 50 ms from when the
/// search began (a waiting worker uses about a millisecond), so a loaded machine that gives the
/// guest little CPU slows the search down but does not fail it.
async fn spinning_worker(gateway: u32) -> u32 {
    let until = Instant::now() + Duration::from_secs(10);
    let mut first_seen: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
    loop {
        for pid in worker_processes(gateway) {
            let ticks = cpu_ticks(pid, "");
            let start = *first_seen.entry(pid).or_insert(ticks);
            if ticks > start + 5 {
                return pid;
            }
        }
        assert!(Instant::now() < until, "no worker is running the guest");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn a_confined_worker_cannot_open_connect_exec_fork_or_trace() {
    if !confinement_supported("a_confined_worker_cannot_open_connect_exec_fork_or_trace") {
        return;
    }
    let output = std::process::Command::new(toolweave())
        .args(["__toolweave-worker", "confinement-check"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        report.get("error").is_none(),
        "confinement failed: {report}"
    );
    let eperm = json!("denied: Operation not permitted");
    // The seccomp filter: every one of these fails with EPERM, nothing happens. (The flags a
    // thread may not be started with are the next test's.)
    let attempts: Vec<&str> = ESCAPE_ATTEMPTS
        .iter()
        .copied()
        .filter(|attempt| !attempt.starts_with("clone_"))
        .collect();
    assert!(attempts.len() >= 10, "{attempts:?}");
    for attempt in attempts {
        assert_eq!(report[attempt], eperm, "{attempt}: {report}");
    }
    // Threads are how the worker reads replies while the guest runs; the idle scheduling
    // class is where it frees its memory after its outcome.
    assert_eq!(report["thread"], json!("allowed"), "{report}");
    assert_eq!(report["idle_class"], json!("allowed"), "{report}");
    // Landlock, checked before the filter hides it, where the kernel has it.
    if report["landlock"] == json!("Unavailable") {
        missing_prerequisite(
            "the Landlock half of a_confined_worker_cannot_open_connect_exec_fork_or_trace",
            &format!("this kernel has no Landlock ({report})"),
        );
    } else {
        let eacces = json!("denied: Permission denied");
        assert_eq!(report["landlock_open"], eacces, "{report}");
        assert_eq!(report["landlock_create"], eacces, "{report}");
        if report["landlock"] == json!("Full") {
            assert_eq!(report["landlock_connect"], eacces, "{report}");
        }
    }
    assert!(
        !std::path::Path::new("/tmp/toolweave-confinement-check").exists(),
        "the confined worker created a file"
    );
}

#[test]
fn a_confined_worker_starts_threads_as_pthread_create_does_and_with_no_other_flag() {
    if !confinement_supported(
        "a_confined_worker_starts_threads_as_pthread_create_does_and_with_no_other_flag",
    ) {
        return;
    }
    let output = std::process::Command::new(toolweave())
        .args(["__toolweave-worker", "confinement-check"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        report.get("error").is_none(),
        "confinement failed: {report}"
    );
    // `clone` as `pthread_create` calls it: the thread starts (and ends).
    assert_eq!(report["clone_thread"], json!("allowed"), "{report}");
    // Each other flag added to those (every flag `clone` reads in its low half that a thread
    // made by `pthread_create` does not pass, by the name the check reports it under): refused
    // by the filter, before the kernel looks at the call (which would refuse some combinations
    // itself, with EINVAL).
    let eperm = json!("denied: Operation not permitted");
    let flags: Vec<&str> = ESCAPE_ATTEMPTS
        .iter()
        .copied()
        .filter(|attempt| attempt.starts_with("clone_"))
        .collect();
    assert!(flags.len() >= 15, "{flags:?}");
    let allowed: Vec<String> = flags
        .iter()
        .filter(|flag| report[**flag] != eperm)
        .map(|flag| format!("{flag}: {}", report[*flag]))
        .collect();
    assert!(allowed.is_empty(), "not refused with EPERM: {allowed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_running_a_guest_is_confined_by_the_kernel() {
    if !confinement_supported("a_worker_running_a_guest_is_confined_by_the_kernel") {
        return;
    }
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &["--timeout-ms", "20000"])
        .await
        .unwrap();
    let gateway = server.process_id().unwrap();
    for (language, code, done) in [
        (
            "javascript",
            "const start = Date.now(); while (Date.now() < start + 2000) {} return 'done'",
            "done",
        ),
        (
            "python",
            "n = 0\nwhile True:\n    n += 1\n    if n > 3000000:\n        break\n'done'",
            "done",
        ),
    ] {
        let inspect = async {
            let worker = spinning_worker(gateway).await;
            assert_ne!(worker, gateway);
            let fields: Vec<(&str, Option<String>)> = ["Seccomp", "NoNewPrivs"]
                .into_iter()
                .map(|field| (field, status_field(worker, field)))
                .collect();
            let descriptors: Vec<String> = std::fs::read_dir(format!("/proc/{worker}/fd"))
                .unwrap()
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            let environment = std::fs::read(format!("/proc/{worker}/environ")).unwrap();
            let directory = std::fs::read_link(format!("/proc/{worker}/cwd")).unwrap();
            let limits = std::fs::read_to_string(format!("/proc/{worker}/limits")).unwrap();
            let policies = scheduling_policies(worker);
            (
                fields,
                descriptors,
                environment,
                directory,
                limits,
                policies,
            )
        };
        let (execution, (fields, mut descriptors, environment, directory, limits, policies)) =
            tokio::join!(server.execute(code, language), inspect);
        assert_eq!(execution.unwrap().value().unwrap(), &json!(done));
        assert_eq!(
            fields,
            [
                ("Seccomp", Some("2".to_owned())),
                ("NoNewPrivs", Some("1".to_owned()))
            ],
            "{language}"
        );
        descriptors.sort();
        assert_eq!(descriptors, ["0", "1", "2"], "{language}: open descriptors");
        // Nothing but the log filter the harness sets.
        assert_eq!(
            String::from_utf8_lossy(&environment),
            "TOOLWEAVE_LOG=warn\0",
            "{language}"
        );
        assert!(
            directory
                .file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("toolweave-workers-")),
            "{language}: works in {}",
            directory.display()
        );
        assert_eq!(std::fs::read_dir(&directory).unwrap().count(), 0);
        for (limit, soft) in [
            ("Max file size", "0"),
            ("Max open files", "3"),
            ("Max core file size", "0"),
        ] {
            let line = limits.lines().find(|line| line.starts_with(limit)).unwrap();
            assert_eq!(
                line.split_whitespace().nth(limit.split(' ').count()),
                Some(soft),
                "{language}: {line}"
            );
        }
        for limit in ["Max address space", "Max cpu time"] {
            let line = limits.lines().find(|line| line.starts_with(limit)).unwrap();
            assert!(!line.contains("unlimited"), "{language}: {line}");
        }
        // The guest runs at the gateway's priority; the main thread, which only waits for it and
        // then frees the process's memory, is in the idle class (SCHED_OTHER 0, SCHED_IDLE 5).
        assert_eq!(
            policies,
            [
                ("toolweave".to_owned(), 5),
                ("toolweave-worke".to_owned(), 0)
            ],
            "{language}: the worker's threads and their scheduling policies"
        );
    }
    server.stop().await.unwrap();
}

/// Each thread of `process_id` by name, with its scheduling policy (field 41 of its `stat`), in
/// thread-id order (the main thread first).
fn scheduling_policies(process_id: u32) -> Vec<(String, u32)> {
    let mut threads: Vec<(u32, String, u32)> =
        std::fs::read_dir(format!("/proc/{process_id}/task"))
            .unwrap()
            .filter_map(Result::ok)
            .filter_map(|task| {
                let id: u32 = task.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
                let (name, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
                let policy = rest.split_whitespace().nth(41 - 3)?.parse().ok()?;
                Some((id, name.to_owned(), policy))
            })
            .collect();
    threads.sort_unstable();
    threads
        .into_iter()
        .map(|(_, name, policy)| (name, policy))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_crashes_is_reported_and_replaced() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &["--timeout-ms", "20000"])
        .await
        .unwrap();
    let gateway = server.process_id().unwrap();
    for (signal, name, language, code) in [
        // An interpreter's abort, and the kernel's OOM killer (SIGKILL).
        ("ABRT", "SIGABRT", "javascript", "while (true) {}"),
        (
            "KILL",
            "SIGKILL",
            "typescript",
            "let n: number = 0; while (true) { n++ }",
        ),
        ("ABRT", "SIGABRT", "python", "while True:\n    pass"),
    ] {
        let crash = async {
            let worker = spinning_worker(gateway).await;
            let status = std::process::Command::new("kill")
                .arg(format!("-{signal}"))
                .arg(worker.to_string())
                .status()
                .unwrap();
            assert!(status.success());
        };
        let (execution, ()) = tokio::join!(server.execute(code, language), crash);
        let execution = execution.unwrap();
        assert!(execution.is_error, "{language}: {}", execution.text);
        assert_eq!(
            execution.error_kind(),
            Some("Internal"),
            "{}",
            execution.text
        );
        assert!(
            execution.text.contains(name),
            "{language}: the error should name {name}: {}",
            execution.text
        );
        let after = server
            .execute(
                if language == "python" {
                    "'replaced'"
                } else {
                    "return 'replaced'"
                },
                language,
            )
            .await
            .unwrap();
        assert_eq!(after.value().unwrap(), &json!("replaced"), "{language}");
    }
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_stops_answering_is_killed_at_the_deadline() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    // A deadline long enough for the spinning worker to be found and stopped before it would
    // stop at its own deadline, on a loaded machine too.
    let server = Toolweave::start(toolweave(), &config, &["--timeout-ms", "3000"])
        .await
        .unwrap();
    let gateway = server.process_id().unwrap();
    let stopped = async {
        let worker = spinning_worker(gateway).await;
        // A stopped process cannot see its own deadline: only the host can end it.
        let status = std::process::Command::new("kill")
            .args(["-STOP", &worker.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        worker
    };
    let started = Instant::now();
    let (execution, worker) =
        tokio::join!(server.execute("while (true) {}", "javascript"), stopped);
    let execution = execution.unwrap();
    assert_eq!(
        execution.error_kind(),
        Some("Timeout"),
        "{}",
        execution.text
    );
    // The deadline (3 s) plus the host's grace (1.5 s), with room for a loaded machine; a host
    // that waited for the stopped worker would never answer.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "answered after {:?}",
        started.elapsed()
    );
    // Killed, not left stopped: gone, or a zombie about to be reaped.
    let until = Instant::now() + Duration::from_secs(5);
    while status_field(worker, "State").is_some_and(|state| !state.starts_with('Z')) {
        assert!(Instant::now() < until, "the stopped worker was not killed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let after = server.execute("return 1", "javascript").await.unwrap();
    assert_eq!(after.value().unwrap(), &json!(1));
    server.stop().await.unwrap();
}

/// Waits until the gateway has at least `each` workers of both kinds, and returns them.
async fn waiting_workers(gateway: u32, each: usize) -> Vec<(u32, String)> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let workers = workers_with_kinds(gateway);
        let kinds = |kind: &str| workers.iter().filter(|(_, k)| k == kind).count();
        if kinds("javascript") >= each && kinds("python") >= each {
            return workers;
        }
        assert!(
            Instant::now() < until,
            "the pools did not fill up: {workers:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_are_forked_by_a_fork_server_and_outlive_its_loss() {
    if !confinement_supported("workers_are_forked_by_a_fork_server_and_outlive_its_loss") {
        return;
    }
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    let gateway = server.process_id().unwrap();
    // The pools full (four waiting of each kind), so that no worker is forked after this look.
    let waiting = waiting_workers(gateway, 4).await;
    let servers = fork_servers(gateway);
    let mut kinds: Vec<&str> = servers.iter().map(|(_, kind)| kind.as_str()).collect();
    kinds.sort_unstable();
    assert_eq!(kinds, ["javascript", "python"], "one fork server per kind");
    for (worker, kind) in &waiting {
        let parent = parent_process(*worker).unwrap();
        assert!(
            servers.contains(&(parent, kind.clone())),
            "worker {worker} ({kind}) should be forked by its kind's fork server, not by {parent}"
        );
        // A worker counts as waiting from its fork on, and confines itself right after: give
        // the youngest a moment to get there.
        assert_eq!(seccomp_mode_soon(*worker).await.as_deref(), Some("2"));
        assert_eq!(status_field(*worker, "NoNewPrivs").as_deref(), Some("1"));
    }

    // A fork server that is gone (killed, say) takes its waiting workers with it; the gateway
    // notices, starts its workers itself from then on, and keeps answering.
    for (pid, _) in &servers {
        let status = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
    // Its workers die with it. (The gateway hands no job to a waiting worker of a fork server it
    // knows is gone; one handed a job in the instant between would report being killed: that is
    // the one execution such a loss can cost.)
    let until = Instant::now() + Duration::from_secs(10);
    let alive = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.starts_with(" Z"))
        })
    };
    while waiting.iter().any(|(worker, _)| alive(*worker)) {
        assert!(
            Instant::now() < until,
            "the forked workers outlived their fork server"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for round in 0..4 {
        for (language, code) in [
            ("javascript", format!("return {round} * 2")),
            ("python", format!("{round} * 2")),
        ] {
            let execution = server.execute(&code, language).await.unwrap();
            assert_eq!(
                execution.value().unwrap(),
                &json!(round * 2),
                "{language}, round {round}: {}",
                execution.text
            );
        }
    }
    // The pools are filled again by the gateway itself: no waiting worker is a stray of the
    // fork servers (those may take a moment to be reaped under load).
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let strays: Vec<(u32, String)> = waiting_workers(gateway, 2)
            .await
            .into_iter()
            .filter(|(worker, _)| parent_process(*worker) != Some(gateway))
            .collect();
        if strays.is_empty() {
            break;
        }
        assert!(
            Instant::now() < until,
            "workers {strays:?} should be started by the gateway now"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.stop().await.unwrap();
}

/// How many threads of `process_id` are named `name` (truncated to 15 bytes, as the kernel keeps
/// thread names).
fn threads_named(process_id: u32, name: &str) -> usize {
    let name = &name[..name.len().min(15)];
    std::fs::read_dir(format!("/proc/{process_id}/task"))
        .map(|tasks| {
            tasks
                .filter_map(Result::ok)
                .filter(|task| {
                    std::fs::read_to_string(task.path().join("comm"))
                        .is_ok_and(|comm| comm.trim_end() == name)
                })
                .count()
        })
        .unwrap_or(0)
}

/// Engine threads with prepared runtimes are kept only where guest code runs on them: in
/// process, four; with workers for both languages, none (each would hold a QuickJS runtime
/// nobody uses).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_threads_are_kept_only_where_guest_code_runs_on_them() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    for (isolation, kept) in [("worker", 0), ("in-process", 4)] {
        let server = Toolweave::start(toolweave(), &config, &["--isolation", isolation])
            .await
            .unwrap();
        let gateway = server.process_id().unwrap();
        let javascript = server
            .execute("await tools.fixture.add({ a: 1, b: 2 })", "javascript")
            .await
            .unwrap();
        assert_eq!(javascript.value().unwrap(), &json!("3"), "{isolation}");
        let python = server
            .execute("await tools.fixture.add(a=2, b=3)", "python")
            .await
            .unwrap();
        assert_eq!(python.value().unwrap(), &json!("5"), "{isolation}");
        // The pool settles at its idle target once its threads have handed back their outcome.
        let deadline = Instant::now() + Duration::from_secs(5);
        while threads_named(gateway, "toolweave-engine") != kept && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            threads_named(gateway, "toolweave-engine"),
            kept,
            "{isolation}"
        );
        server.stop().await.unwrap();
    }
}
