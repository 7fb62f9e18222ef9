//! Programs against faulty upstream servers (`tests/hostile/upstream/`): the fixture's `--faults`
//! mode sends, byte for byte, what faulty servers send, on stdio, streamable HTTP (event streams
//! and JSON bodies) and legacy SSE. Each program must end as its file says, with the other
//! client's executions unstalled and the gateway answering after it.

use serde_json::{Map, json};
use toolweave_testkit::cases::{self, Case};
use toolweave_testkit::fixture_binary;
use toolweave_testkit::fixture_http::RemoteFixture;

use super::gateway::{Gateway, write_config};
use super::{repo_root, serial};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faulty_upstreams_in_workers() {
    faulty_upstreams("worker").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faulty_upstreams_in_process() {
    faulty_upstreams("in-process").await;
}

async fn faulty_upstreams(isolation: &str) {
    let _serial = serial().await;
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture_binary();
    let remote = |arguments: &'static [&'static str]| async move {
        RemoteFixture::start(arguments)
            .await
            .unwrap_or_else(|error| panic!("the faulty HTTP fixture did not start: {error:#}"))
    };
    let http = remote(&["--faults", "--http", "127.0.0.1:0"]).await;
    let json_bodies = remote(&[
        "--faults",
        "--http",
        "127.0.0.1:0",
        "--fault-framing",
        "json",
    ])
    .await;
    let sse = remote(&["--faults", "--sse", "127.0.0.1:0"]).await;
    let mut servers = Map::new();
    let stdio = |arguments: &[&str]| json!({ "command": fixture, "args": arguments });
    servers.insert("f".into(), stdio(&["--faults"]));
    servers.insert("deaf".into(), stdio(&["--faults"]));
    servers.insert(
        "bad_tools".into(),
        stdio(&["--faults", "--fault-tools", "malformed,deep:48,deep:70"]),
    );
    servers.insert(
        "huge".into(),
        stdio(&["--faults", "--fault-tools", "deep:100000"]),
    );
    servers.insert("f_http".into(), json!({ "type": "http", "url": http.url }));
    servers.insert(
        "f_json".into(),
        json!({ "type": "http", "url": json_bodies.url }),
    );
    servers.insert("f_sse".into(), json!({ "type": "sse", "url": sse.url }));
    let config = write_config(dir.path(), servers);
    let mut gateway = Gateway::start(&config, isolation, &["--tool-timeout-ms", "2000"]).await;

    let root = repo_root().join("tests/hostile/upstream");
    let files = cases::files_in(std::slice::from_ref(&root)).unwrap();
    assert!(
        files.len() >= 6,
        "expected the programs in {}",
        root.display()
    );
    let mut failures = Vec::new();
    for path in &files {
        let case = Case::read(path).unwrap();
        let name = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .display()
            .to_string();
        let problems = gateway.case_problems(&case).await;
        if !problems.is_empty() {
            failures.push(format!("{name}:\n  {}", problems.join("\n  ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} programs against faulty upstreams failed ({isolation}):\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}
