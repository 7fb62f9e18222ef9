//! Engine time alone, without MCP or threads: `cargo bench -p toolweave-sandbox --bench engine`.
//!
//! Each program runs many times on the calling thread through `toolweave_sandbox::run`, against
//! a host that answers every tool call at once; medians, p90 and min are printed.

#![expect(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolweave_sandbox::{
    CancelFlag, EngineEvent, EngineLimits, ExecuteRequest, HostReply, Language, Manifest, Namespace,
};

const RUNS: usize = 2000;

fn request(code: &str, language: Language) -> ExecuteRequest {
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
        manifest: Manifest {
            namespaces: vec![Namespace {
                name: "fixture".to_owned(),
                tools: Some(vec!["add".to_owned(), "echo".to_owned()]),
            }],
        },
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
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
    ];
    for (label, code, language) in cases {
        let mut samples = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            let (replies_tx, replies_rx) = mpsc::channel();
            let started = Instant::now();
            let outcome = toolweave_sandbox::run(
                request(code, language),
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
            assert!(outcome.result.is_ok(), "{label}: {:?}", outcome.result);
        }
        samples.sort();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!(
            "{label:<36} median {:>7.1} µs   p90 {:>7.1} µs   min {:>7.1} µs   (n={RUNS})",
            us(samples[RUNS / 2]),
            us(samples[RUNS * 9 / 10]),
            us(samples[0])
        );
    }
}
