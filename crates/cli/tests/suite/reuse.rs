//! A session's executions run one after another in the same confined worker, each in a fresh
//! engine runtime: programs that try to leave something behind for the next execution (globals,
//! prototypes, builtins, timers, calls still running, a large heap, a wedged engine) find
//! nothing of it there, in either language. That the worker is the same one is read from outside:
//! the gateway starts no new worker process between the session's executions.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};
use toolweave_testkit::harness::{Toolweave, fixture_config, worker_processes};

use super::toolweave;

/// The gateway's worker processes once it has had a moment to start the ones it keeps waiting.
async fn settled_workers(gateway: u32) -> BTreeSet<u32> {
    let mut last = BTreeSet::new();
    // The same set twice, 150 ms apart: no worker is being started or let go.
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let now: BTreeSet<u32> = worker_processes(gateway).into_iter().collect();
        if now == last && !now.is_empty() {
            return now;
        }
        last = now;
    }
    panic!("the gateway's worker processes did not settle: {last:?}");
}

/// Runs `code` and returns its value, failing with the answer when it failed.
async fn value(gateway: &Toolweave, code: &str, language: &str) -> Value {
    let execution = gateway.execute(code, language).await.unwrap();
    execution
        .value()
        .unwrap_or_else(|error| panic!("{code}: {error}"))
        .clone()
}

/// What each JavaScript program leaves behind, and what the next one checks; run in turn in
/// one session. Every check returns `"clean"` when nothing of the program before is seen.
const JAVASCRIPT: &[(&str, &str)] = &[
    (
        "globalThis.leaked = 42; var declared = 1; Object.prototype.polluted = 'yes'; \
         Array.prototype.map = () => 'hijacked'; JSON.stringify = () => 'hijacked'; \
         Math.random = () => 4; return 1",
        "return [typeof leaked, typeof declared, ({}).polluted, [1, 2].map(n => n * 2).join(), \
         JSON.stringify({ a: 1 }), Math.random() < 1].join() === \
         'undefined,undefined,,2,4,{\"a\":1},true' ? 'clean' : 'dirty'",
    ),
    (
        // A timer still pending and a call still running when the program ends.
        "setTimeout(() => { globalThis.late = 'timer'; console.log('late timer ran') }, 20); \
         tools.fixture.slow({ ms: 300 }).then(() => { globalThis.late = 'call' }); return 1",
        "await new Promise(resolve => setTimeout(resolve, 400)); \
         return typeof late === 'undefined' ? 'clean' : late",
    ),
    (
        // A heap of 24 MiB, twice: with the first still held the second would pass the limit.
        "const held = []; for (let i = 0; i < 24; i++) held.push('x'.repeat(1 << 20) + i); \
         globalThis.held = held; return held.length",
        "const held = []; for (let i = 0; i < 24; i++) held.push('y'.repeat(1 << 20) + i); \
         return typeof globalThis.held === 'undefined' && held.length === 24 ? 'clean' : 'dirty'",
    ),
];

/// The same for Python.
const PYTHON: &[(&str, &str)] = &[
    (
        "leaked = 42\ndef helper():\n    return 1\nhelper()",
        "try:\n    leaked\n    result = 'dirty'\nexcept NameError:\n    try:\n        helper\n        \
         result = 'dirty'\n    except NameError:\n        result = 'clean'\nresult",
    ),
    (
        "held = [('x' * (1 << 20)) + str(i) for i in range(24)]\nlen(held)",
        "held = [('y' * (1 << 20)) + str(i) for i in range(24)]\n'clean' if len(held) == 24 else 'dirty'",
    ),
];

#[tokio::test]
async fn a_sessions_next_execution_in_its_kept_worker_finds_nothing_of_the_last() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let gateway = Toolweave::start(toolweave(), &config, &["--memory-mb", "40"])
        .await
        .unwrap();
    let pid = gateway.process_id().unwrap();
    // A first execution of each language takes a worker of its kind and keeps it.
    value(&gateway, "return 1", "javascript").await;
    value(&gateway, "1", "python").await;
    let before = settled_workers(pid).await;
    for (language, programs) in [("javascript", JAVASCRIPT), ("python", PYTHON)] {
        for (leave, check) in programs {
            value(&gateway, leave, language).await;
            let found = value(&gateway, check, language).await;
            assert_eq!(found, json!("clean"), "{language}: after {leave}");
        }
    }
    // TypeScript runs in the JavaScript worker too.
    let typed = value(&gateway, "const n: number = 2; return n * 3", "typescript").await;
    assert_eq!(typed, json!(6));
    // No worker was started or let go: every execution ran in the worker its session kept.
    assert_eq!(settled_workers(pid).await, before);
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn a_wedged_or_failed_execution_ends_its_worker_and_the_next_starts_in_a_fresh_one() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let gateway = Toolweave::start(toolweave(), &config, &["--memory-mb", "40"])
        .await
        .unwrap();
    let pid = gateway.process_id().unwrap();
    for (language, wedge, overflow, check) in [
        (
            "javascript",
            "globalThis.stuck = 1; while (true) {}",
            "const held = []; while (true) held.push('z'.repeat(1 << 20));",
            "return typeof stuck === 'undefined' ? 'clean' : 'dirty'",
        ),
        (
            "python",
            "stuck = 1\nwhile True:\n    pass",
            "held = []\nwhile True:\n    held.append('z' * (1 << 20))",
            "try:\n    stuck\n    result = 'dirty'\nexcept NameError:\n    result = 'clean'\nresult",
        ),
    ] {
        value(&gateway, "1", language).await;
        let before = settled_workers(pid).await;
        let wedged = gateway
            .call(
                "execute_code",
                json!({ "code": wedge, "language": language, "timeoutMs": 500 }),
            )
            .await
            .unwrap();
        let wedged = toolweave_testkit::harness::Execution::from_result(wedged).unwrap();
        assert_eq!(wedged.error_kind(), Some("Timeout"), "{}", wedged.text);
        // The worker that timed out was ended and replaced.
        let after = settled_workers(pid).await;
        assert_ne!(
            after, before,
            "{language}: the wedged worker is still there"
        );
        assert_eq!(value(&gateway, check, language).await, json!("clean"));
        let overflowed = gateway.execute(overflow, language).await.unwrap();
        assert_eq!(
            overflowed.error_kind(),
            Some("MemoryLimit"),
            "{}",
            overflowed.text
        );
        assert_eq!(value(&gateway, check, language).await, json!("clean"));
    }
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn with_fresh_workers_no_worker_runs_two_executions() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let gateway = Toolweave::start(toolweave(), &config, &["--fresh-workers"])
        .await
        .unwrap();
    let pid = gateway.process_id().unwrap();
    value(&gateway, "return 1", "javascript").await;
    let before = settled_workers(pid).await;
    value(&gateway, "return 2", "javascript").await;
    let after = settled_workers(pid).await;
    // The worker that ran it ended, and a fresh one took its place among those waiting.
    assert_eq!(after.len(), before.len());
    assert_ne!(after, before);
    gateway.stop().await.unwrap();
}
