//! End-to-end benchmark over stdio: the real binary, a real MCP client, the fixture upstream.
//!
//! `cargo bench -p toolweave --bench gateway -- e2e` (release profile). Prints medians, p90 and min over
//! repeated runs for: spawn → initialize answered (three upstream servers configured), tools/list
//! size in tokens (cl100k), a trivial execution, an execution making one upstream call, and the
//! same upstream call made directly to the fixture server; JavaScript in worker isolation (the
//! default) and in process; throughput with 8 requests in flight; memory of the gateway and of
//! a waiting worker.
//!
//! `TOOLWEAVE_BENCH_BINARY=/path/to/toolweave` measures another build of the binary (A/B).

use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Map, Value, json};
use toolweave_testkit::harness::workers_with_kinds;

use crate::{binary, proportional_kib, resident_kib};

const RUNS: usize = 300;
/// Blocks per gateway and pace (see the latency loop).
const BLOCKS: usize = 10;
/// The pause before each block.
const SETTLE: Duration = Duration::from_millis(100);
const INIT_RUNS: usize = 30;
const CONCURRENCY: usize = 8;
const THROUGHPUT_RUNS: usize = 2000;

fn summary(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = ms(samples[samples.len() / 2]);
    let p90 = ms(samples[(samples.len() * 9) / 10]);
    println!(
        "{label:<48} median {median:>8.3} ms   p90 {p90:>8.3} ms   min {:>8.3} ms   (n={})",
        ms(samples[0]),
        samples.len()
    );
}

fn arguments(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
pub async fn main() {
    let toolweave = binary("toolweave");
    let fixture = binary("toolweave-fixture");
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("mcp.json");
    let servers: Map<String, Value> = ["alpha", "beta", "fixture"]
        .iter()
        .map(|name| {
            (
                (*name).to_owned(),
                json!({ "command": fixture, "args": ["--name", name] }),
            )
        })
        .collect();
    std::fs::write(
        &config,
        serde_json::to_vec(&json!({ "mcpServers": servers })).expect("json"),
    )
    .expect("write config");

    let spawn = |command: &Path, args: Vec<String>| {
        let command = tokio::process::Command::new(command).configure(|c| {
            // Its own configuration folder: a benchmark never writes the user's.
            c.args(&args)
                .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home());
        });
        TokioChildProcess::builder(command)
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn")
            .0
    };
    let serve_args = vec![
        "serve".to_owned(),
        "--config".to_owned(),
        config.display().to_string(),
    ];

    let python = |code: &str| {
        CallToolRequestParams::new("execute_code")
            .with_arguments(arguments(json!({ "code": code, "language": "python" })))
    };

    // Cold start: spawn -> initialize answered, three upstream servers configured; then the
    // first Python execution, sent as soon as initialize is answered.
    let mut init = Vec::new();
    let mut first_python = Vec::new();
    let mut first_python_from_spawn = Vec::new();
    for _ in 0..INIT_RUNS {
        let spawned = Instant::now();
        let client = ().serve(spawn(&toolweave, serve_args.clone())).await.expect("initialize");
        init.push(spawned.elapsed());
        let started = Instant::now();
        let result = client.call_tool(python("1 + 1")).await.expect("call");
        first_python.push(started.elapsed());
        first_python_from_spawn.push(spawned.elapsed());
        assert_ne!(result.is_error, Some(true), "{result:?}");
        client.cancel().await.expect("close");
    }
    // The first Python program a gateway runs once it has started (its upstream servers and
    // its first worker up): what a client meets whose model writes the first program after
    // `initialize` and `tools/list`.
    let mut first_python_started = Vec::new();
    for _ in 0..INIT_RUNS / 2 {
        let client = ().serve(spawn(&toolweave, serve_args.clone())).await.expect("initialize");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let started = Instant::now();
        let result = client.call_tool(python("1 + 1")).await.expect("call");
        first_python_started.push(started.elapsed());
        assert_ne!(result.is_error, Some(true), "{result:?}");
        client.cancel().await.expect("close");
    }
    summary("spawn -> initialize (3 upstreams)", init);
    summary("first Python execution after initialize", first_python);
    summary(
        "spawn -> first Python execution answered",
        first_python_from_spawn,
    );
    summary(
        "first Python execution, 100 ms after init",
        first_python_started,
    );

    let transport = spawn(&toolweave, serve_args.clone());
    let process_id = transport.id().expect("process id");
    let client = ().serve(transport).await.expect("initialize");
    let mut in_process_args = serve_args.clone();
    in_process_args.extend(["--isolation".to_owned(), "in-process".to_owned()]);
    let in_process = ().serve(spawn(&toolweave, in_process_args)).await.expect("initialize");
    let tools = client.list_all_tools().await.expect("tools/list");
    let text = serde_json::to_string(&json!({ "tools": tools })).expect("json");
    let tokens = tiktoken_rs::cl100k_base_singleton()
        .encode_with_special_tokens(&text)
        .len();
    println!(
        "{:<48} {} bytes, {tokens} tokens (cl100k)",
        "tools/list size",
        text.len()
    );

    let execute = |code: &str| {
        CallToolRequestParams::new("execute_code")
            .with_arguments(arguments(json!({ "code": code, "language": "javascript" })))
    };
    // Warm up: upstreams started, code paths touched.
    for peer in [&client, &in_process] {
        for _ in 0..20 {
            let result = peer
                .call_tool(execute("return await tools.fixture.add({ a: 2, b: 5 })"))
                .await
                .expect("warm-up");
            assert_ne!(result.is_error, Some(true), "{result:?}");
        }
    }

    // The same upstream call made directly to a fixture server of its own, for comparison.
    let direct =
        ().serve(spawn(&fixture, vec!["--name".into(), "direct".into()]))
            .await
            .expect("fixture initialize");
    let add =
        CallToolRequestParams::new("add").with_arguments(arguments(json!({ "a": 2, "b": 5 })));
    for _ in 0..20 {
        direct.call_tool(add.clone()).await.expect("warm-up");
    }

    let typescript = CallToolRequestParams::new("execute_code").with_arguments(arguments(
        json!({ "code": "const n: number = 1 + 1; return n" }),
    ));
    let trivial = execute("return 1 + 1");
    let one_call = execute("return await tools.fixture.add({ a: 2, b: 5 })");
    let python_trivial = python("1 + 1");
    let python_one_call = python("await tools.fixture.add(a=2, b=5)");
    // Back to back, and with a pause before each request: a model takes seconds between calls,
    // which lets the engine prepare its next runtime off the request's path.
    //
    // Each gateway is measured in blocks of its own, the other one idle, so that one gateway's
    // background work (starting replacement workers) does not land in the other's samples;
    // within a block the series are interleaved, and the blocks alternate, so drift in the
    // machine's load affects every series alike. The direct call is measured in every block.
    let worker_block = [
        (0, &client, &trivial),
        (1, &client, &typescript),
        (2, &client, &one_call),
        (3, &direct, &add),
        (6, &client, &python_trivial),
        (7, &client, &python_one_call),
    ];
    let in_process_block = [
        (3, &direct, &add),
        (4, &in_process, &trivial),
        (5, &in_process, &one_call),
    ];
    for (pause, suffix) in [
        (None, "back to back"),
        (Some(Duration::from_millis(5)), "5 ms apart"),
    ] {
        let mut samples: [Vec<Duration>; 8] = Default::default();
        for _ in 0..BLOCKS {
            for block in [&worker_block[..], &in_process_block[..]] {
                // The previous block's background work finishes first.
                tokio::time::sleep(SETTLE).await;
                for _ in 0..RUNS / BLOCKS {
                    for (series, peer, request) in block {
                        if let Some(pause) = pause {
                            tokio::time::sleep(pause).await;
                        }
                        let started = Instant::now();
                        let result = peer.call_tool((*request).clone()).await.expect("call");
                        samples[*series].push(started.elapsed());
                        assert_ne!(result.is_error, Some(true), "{result:?}");
                    }
                }
            }
        }
        let [
            trivial_samples,
            typescript_samples,
            one_call_samples,
            direct_samples,
            in_process_samples,
            in_process_call_samples,
            python_samples,
            python_call_samples,
        ] = samples;
        summary(
            &format!("execute_code trivial JS, {suffix}"),
            trivial_samples,
        );
        summary(
            &format!("execute_code trivial TS, {suffix}"),
            typescript_samples,
        );
        summary(
            &format!("execute_code one upstream call, {suffix}"),
            one_call_samples,
        );
        summary(
            &format!("the same call made directly, {suffix}"),
            direct_samples,
        );
        summary(
            &format!("in process: trivial JS, {suffix}"),
            in_process_samples,
        );
        summary(
            &format!("in process: one upstream call, {suffix}"),
            in_process_call_samples,
        );
        summary(
            &format!("execute_code trivial Python, {suffix}"),
            python_samples,
        );
        summary(
            &format!("execute_code Python one upstream call, {suffix}"),
            python_call_samples,
        );
    }
    // Throughput: 8 requests in flight at all times over one session.
    for (label, peer) in [("worker isolation", &client), ("in process", &in_process)] {
        for (what, request) in [("trivial JS", &trivial), ("one upstream call", &one_call)] {
            let started = Instant::now();
            let mut lanes = Vec::new();
            for _ in 0..CONCURRENCY {
                let peer = peer.peer().clone();
                let request = request.clone();
                lanes.push(tokio::spawn(async move {
                    for _ in 0..THROUGHPUT_RUNS / CONCURRENCY {
                        let result = peer.call_tool(request.clone()).await.expect("call");
                        assert_ne!(result.is_error, Some(true), "{result:?}");
                    }
                }));
            }
            for lane in lanes {
                lane.await.expect("lane");
            }
            let rate = THROUGHPUT_RUNS as f64 / started.elapsed().as_secs_f64();
            println!(
                "{:<48} {rate:>8.0} executions/s ({THROUGHPUT_RUNS} executions)",
                format!("{what}, {CONCURRENCY} in flight, {label}")
            );
        }
    }

    println!(
        "{:<48} {} KiB (VmRSS of toolweave serve after the runs above)",
        "resident memory",
        resident_kib(process_id)
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut kinds_seen = Vec::new();
    for (pid, kind) in workers_with_kinds(process_id) {
        if kinds_seen.contains(&kind) {
            continue;
        }
        kinds_seen.push(kind.clone());
        println!(
            "{:<48} {} KiB VmRSS, {} KiB Pss",
            format!("a waiting {kind} worker"),
            resident_kib(pid),
            proportional_kib(pid)
        );
    }
    in_process.cancel().await.expect("close");
    client.cancel().await.expect("close");
    direct.cancel().await.expect("close");
}
