//! Engine time alone, without MCP or threads: `cargo bench -p toolweave-sandbox --bench engine`.
//!
//! Each program runs many times on the calling thread through `toolweave_sandbox::execute`, against
//! a host that answers every tool call at once; medians, p90 and min are printed. A last section
//! runs trivial programs against catalogs of 10 and 1,000 tools: what setting up `tools` costs
//! an execution as the catalog grows. An argument runs only the cases whose label contains it.

#![allow(
    clippy::too_many_lines,
    reason = "a benchmark's scenario reads top to bottom in one function"
)]
#![expect(clippy::print_stdout, reason = "a benchmark reports on stdout")]
#![expect(
    clippy::expect_used,
    reason = "a benchmark aborts on the first failure"
)]

use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolweave_sandbox::{
    CancelFlag, EngineEvent, EngineLimits, EnginePool, ExecuteRequest, HostReply, Job, Language,
    Manifest, Namespace,
};

const RUNS: usize = 1000;

fn request(code: &str, language: Language) -> ExecuteRequest {
    request_with(code, language, manifest())
}

fn request_with(
    code: &str,
    language: Language,
    manifest: std::sync::Arc<Manifest>,
) -> ExecuteRequest {
    ExecuteRequest {
        code: code.to_owned(),
        language,
        limits: EngineLimits {
            timeout: Duration::from_secs(10),
            memory_bytes: 64 * 1024 * 1024,
            stack_bytes: 512 * 1024,
            max_log_bytes: 64 * 1024,
            max_result_bytes: 256 * 1024,
            max_tool_calls: 200,
        },
        manifest,
    }
}

/// Three servers of 16 tools each, as the end-to-end benchmark configures: the guest's `tools`
/// holds 48 functions.
fn manifest() -> std::sync::Arc<Manifest> {
    let namespace = |name: &str| Namespace {
        name: name.to_owned(),
        tools: Some(
            ["add", "echo"]
                .into_iter()
                .map(str::to_owned)
                .chain((0..14).map(|index| format!("tool_{index}")))
                .collect(),
        ),
    };
    Manifest {
        namespaces: vec![
            namespace("fixture"),
            namespace("second"),
            namespace("third"),
        ],
    }
    .into()
}

/// `tools` servers of `per_server` tools each.
fn catalog(servers: usize, per_server: usize) -> std::sync::Arc<Manifest> {
    Manifest {
        namespaces: (0..servers)
            .map(|server| Namespace {
                name: if server == 0 {
                    "fixture".to_owned()
                } else {
                    format!("server_{server}")
                },
                tools: Some(
                    std::iter::once("add".to_owned())
                        .chain((1..per_server).map(|index| format!("tool_{index}")))
                        .collect(),
                ),
            })
            .collect(),
    }
    .into()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let filter = std::env::args()
        .skip(1)
        .find(|argument| !argument.starts_with('-'))
        .unwrap_or_default();
    let cases = [
        (
            "trivial JavaScript (return 1 + 1)",
            "return 1 + 1",
            Language::JavaScript,
        ),
        (
            "trivial TypeScript",
            "const n: number = 1 + 1; return n",
            Language::TypeScript,
        ),
        (
            "one tool call",
            "return await tools.fixture.add({ a: 2, b: 5 })",
            Language::JavaScript,
        ),
        (
            "ten concurrent tool calls",
            "const r = await Promise.all([...Array(10).keys()].map((i) => tools.fixture.add({ a: i, b: 1 }))); return r.length",
            Language::JavaScript,
        ),
        ("trivial Python (1 + 1)", "1 + 1", Language::Python),
        (
            "one tool call, Python",
            "await tools.fixture.add(a=2, b=5)",
            Language::Python,
        ),
        (
            "ten gathered tool calls, Python",
            "len(await asyncio.gather(*[tools.fixture.add(a=i, b=1) for i in range(10)]))",
            Language::Python,
        ),
    ];
    // Through the pool: runtimes prepared ahead, as the gateway runs programs. A pause before
    // each submission lets the thread finish preparing, as time between a model's calls does.
    let pool = EnginePool::new(2, 512 * 1024);
    for (label, code, language) in cases.iter().filter(|case| case.0.contains(&filter)) {
        let mut samples = Vec::with_capacity(RUNS);
        let mut inside = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            std::thread::sleep(Duration::from_millis(1));
            let (messages_tx, messages) = mpsc::channel();
            let events = messages_tx.clone();
            let started = Instant::now();
            let execution = pool.submit(Job {
                request: request(code, *language),
                emit: Box::new(move |event| {
                    let _ = events.send(Err(event));
                }),
                finished: Box::new(move |outcome| {
                    let _ = messages_tx.send(Ok(outcome));
                }),
            });
            let outcome = loop {
                match messages.recv().expect("an outcome") {
                    Ok(outcome) => break outcome,
                    Err(EngineEvent::Call(call)) => execution.reply(HostReply::Result {
                        id: call.id,
                        outcome: Ok(json!(7)),
                    }),
                    Err(_) => {}
                }
            };
            samples.push(started.elapsed());
            inside.push(outcome.stats.duration);
            assert!(outcome.result.is_ok(), "{label}: {:?}", outcome.result);
        }
        report(&format!("{label}, prepared runtime"), samples);
        report(&format!("{label}, prepared runtime (engine)"), inside);
    }

    // Without the pool: a runtime created for each program on the calling thread.
    for (label, code, language) in cases.into_iter().filter(|case| case.0.contains(&filter)) {
        report(
            &format!("{label}, fresh runtime"),
            fresh_runs(code, language, &manifest()),
        );
    }

    // What `tools` costs as the catalog grows: 10 tools (one server), 1,000 (ten servers).
    let sizes = [
        ("10 tools", catalog(1, 10)),
        ("1,000 tools", catalog(10, 100)),
    ];
    for (size, manifest) in &sizes {
        for (what, code, language) in [
            ("trivial JavaScript", "return 1 + 1", Language::JavaScript),
            (
                "one tool call",
                "return await tools.fixture.add({ a: 2, b: 5 })",
                Language::JavaScript,
            ),
            ("trivial Python", "1 + 1", Language::Python),
            (
                "one tool call, Python",
                "await tools.fixture.add(a=2, b=5)",
                Language::Python,
            ),
        ] {
            let label = format!("catalog of {size}: {what}, fresh runtime");
            if label.contains(&filter) {
                report(&label, fresh_runs(code, language, manifest));
            }
        }
    }
}

/// Runs `code` [`RUNS`] times, each on a runtime created for it on the calling thread.
fn fresh_runs(
    code: &str,
    language: Language,
    manifest: &std::sync::Arc<Manifest>,
) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let (replies_tx, replies_rx) = mpsc::channel();
        let started = Instant::now();
        let outcome = toolweave_sandbox::execute(
            request_with(code, language, manifest.clone()),
            &mut |event| {
                if let EngineEvent::Call(call) = event {
                    let _ = replies_tx.send(HostReply::Result {
                        id: call.id,
                        outcome: Ok(json!(7)),
                    });
                }
            },
            &replies_rx,
            &CancelFlag::new(),
        );
        samples.push(started.elapsed());
        assert!(outcome.result.is_ok(), "{code}: {:?}", outcome.result);
    }
    samples
}

fn report(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{label:<52} median {:>7.1} µs   p90 {:>7.1} µs   min {:>7.1} µs   (n={})",
        us(samples[samples.len() / 2]),
        us(samples[samples.len() * 9 / 10]),
        us(samples[0]),
        samples.len()
    );
}
