//! `toolweave serve --http` on loopback: latency, executions per second with 1, 8, 64 and 256
//! clients, each its own MCP session sending one execution at a time, with the median and p99 of
//! one execution under that load, and the gateway's memory: per session held, and before and
//! after the load.
//!
//! `cargo bench -p toolweave --bench gateway -- http` (release profile). First the latency of one execution
//! at a time (trivial, and one upstream call); then throughput, where each execution calls the
//! fixture upstream once (`add`) and its answer is checked. `TOOLWEAVE_BENCH_BINARY` measures another
//! build; `TOOLWEAVE_BENCH_ISOLATION=in-process` measures engine threads instead of workers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolweave_testkit::harness::Toolweave;
use toolweave_testkit::http::HttpToolweave;

use crate::{binary, resident_kib};

/// Executions per measured run, per concurrency.
const EXECUTIONS: usize = 4000;
/// Executions before measuring, per concurrency.
const WARM_UP: usize = 400;
/// Executions timed one by one for latency.
const LATENCY_RUNS: usize = 300;

/// `executions` executions over `sessions`, all at once; how long they took, and how long each
/// one took.
async fn run(sessions: &[Arc<Toolweave>], executions: usize) -> (Duration, Vec<Duration>) {
    let started = Instant::now();
    let tasks = sessions.iter().enumerate().map(|(client, session)| {
        let session = session.clone();
        let rounds =
            executions / sessions.len() + usize::from(client < executions % sessions.len());
        tokio::spawn(async move {
            let mut took = Vec::with_capacity(rounds);
            for round in 0..rounds {
                let (a, b) = (client * 100_000, round);
                let sent = Instant::now();
                let result = session
                    .execute(
                        &format!("return await tools.fixture.add({{ a: {a}, b: {b} }})"),
                        "javascript",
                    )
                    .await
                    .expect("execution");
                took.push(sent.elapsed());
                assert_eq!(
                    result.value().expect("a value"),
                    &json!((a + b).to_string())
                );
            }
            took
        })
    });
    let mut took = Vec::with_capacity(executions);
    for task in futures::future::join_all(tasks).await {
        took.extend(task.expect("client task"));
    }
    (started.elapsed(), took)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
pub async fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({ "mcpServers": { "fixture": { "command": binary("toolweave-fixture") } } })
            .to_string(),
    )
    .expect("config");
    let isolation =
        std::env::var("TOOLWEAVE_BENCH_ISOLATION").unwrap_or_else(|_| "worker".to_owned());
    println!("toolweave serve --http, isolation {isolation}, one upstream call per execution");
    {
        // Latency: one client, one execution at a time, a trivial program and one upstream call.
        let server = HttpToolweave::start(
            &binary("toolweave"),
            &config,
            &["--isolation", &isolation],
            &[],
        )
        .await
        .expect("start");
        let session = server.connect(None).await.expect("session");
        for (label, code) in [
            ("trivial execution", "return 1 + 1"),
            (
                "one upstream call",
                "return await tools.fixture.add({ a: 2, b: 5 })",
            ),
        ] {
            for _ in 0..50 {
                session.execute(code, "javascript").await.expect("warm-up");
            }
            let mut samples = Vec::with_capacity(LATENCY_RUNS);
            for _ in 0..LATENCY_RUNS {
                let started = Instant::now();
                let result = session
                    .execute(code, "javascript")
                    .await
                    .expect("execution");
                samples.push(started.elapsed());
                assert!(result.value().is_ok(), "{}", result.text);
            }
            samples.sort();
            let ms = |d: Duration| d.as_secs_f64() * 1000.0;
            println!(
                "{label:<20} median {:.3} ms   p90 {:.3} ms   (one client, n={LATENCY_RUNS})",
                ms(samples[LATENCY_RUNS / 2]),
                ms(samples[LATENCY_RUNS * 9 / 10])
            );
        }
    }
    for clients in [1, 8, 64, 256] {
        let server = HttpToolweave::start(
            &binary("toolweave"),
            &config,
            &["--isolation", &isolation],
            &[("TOOLWEAVE_LOG", "warn")],
        )
        .await
        .expect("start");
        let gateway = server.process_id().expect("pid");
        // One execution first, so the upstream server and the pools are up before sessions
        // are counted.
        let first = server.connect(None).await.expect("session");
        run(&[Arc::new(first)], 10).await;
        let idle = resident_kib(gateway);
        let mut sessions = Vec::new();
        for _ in 0..clients {
            sessions.push(Arc::new(server.connect(None).await.expect("session")));
        }
        let held = resident_kib(gateway);
        run(&sessions, WARM_UP.max(clients * 2)).await;
        let before = resident_kib(gateway);
        let (elapsed, mut took) = run(&sessions, EXECUTIONS).await;
        let after = resident_kib(gateway);
        took.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "{clients:>3} clients: {:>7.0} executions/s ({EXECUTIONS} in {:.2} s), one execution median {:.2} ms p99 {:.2} ms   {:.0} KiB per session held ({idle} → {held} KiB)   gateway RSS {before} → {after} KiB",
            EXECUTIONS as f64 / elapsed.as_secs_f64(),
            elapsed.as_secs_f64(),
            ms(took[took.len() / 2]),
            ms(took[took.len() * 99 / 100]),
            held.saturating_sub(idle) as f64 / clients as f64,
        );
    }
}
