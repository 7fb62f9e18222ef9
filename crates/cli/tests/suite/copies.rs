//! Several copies, no pinning, nothing lost: three `toolweave serve --http --state redis://...`
//! behind HAProxy round-robin (`deploy/haproxy/haproxy-state.cfg`), with Debian's
//! `redis-server` behind them, driven by the official Python SDK (`tests/python/sdk_copies.py`)
//! in its default mode (MCP 2026-07-28) and in `mode="legacy"` against `--stateless` copies:
//! handles, the store and (in the default mode) approvals answered through retries, and tasks
//! read, answered and cancelled, work whichever copy each request reaches, and a copy killed with SIGKILL loses only its own
//! executions. And a Redis that is down: the copy keeps serving, says what failed and where, and
//! picks the shared state up once Redis answers.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolweave_testkit::harness::fixture_config;
use toolweave_testkit::http::HttpToolweave;

use super::balance::{Balancer, said, start_balancer, wait_for};
use super::{repo_root, sdk_python, toolweave, which};

/// A free loopback port (free when picked).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap()
}

/// `redis-server` on `port`, in memory only, until dropped.
async fn start_redis(program: &Path, port: u16) -> tokio::process::Child {
    let child = tokio::process::Command::new(program)
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            Instant::now() < until,
            "redis-server never listened on {port}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child
}

/// The programs the tests need, or `None` after saying which is missing (a failure under CI).
fn programs(test: &str) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let Some(redis) = which("redis-server") else {
        toolweave_testkit::skip::missing_prerequisite(
            test,
            "the `redis-server` program is not installed (apt-get install redis-server)",
        );
        return None;
    };
    let Some(haproxy) = which("haproxy") else {
        toolweave_testkit::skip::missing_prerequisite(
            test,
            "the `haproxy` program is not installed (apt-get install haproxy)",
        );
        return None;
    };
    Some((redis, haproxy))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_copies_behind_haproxy_share_state_with_the_sdk_in_its_default_mode() {
    three_copies_share_state("default").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_stateless_copies_behind_haproxy_share_state_with_the_sdk_in_legacy_mode() {
    three_copies_share_state("legacy").await;
}

async fn three_copies_share_state(mode: &'static str) {
    let test = format!("three copies sharing --state behind HAProxy, the SDK in its {mode} mode");
    let test = test.as_str();
    let Some((redis, haproxy)) = programs(test) else {
        return;
    };
    let python = match sdk_python() {
        Ok(python) => python,
        Err(why) => {
            toolweave_testkit::skip::missing_prerequisite(test, &why);
            return;
        }
    };
    let redis_port = free_port();
    let _redis = start_redis(&redis, redis_port).await;
    let state = format!("redis://127.0.0.1:{redis_port}/0");
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let mut copies = Vec::new();
    for _ in 0..3 {
        let copy = HttpToolweave::start(
            toolweave(),
            &config,
            &[
                "--state",
                &state,
                if mode == "legacy" {
                    "--stateless"
                } else {
                    "--approval=elicitation"
                },
            ],
            &[],
        )
        .await
        .unwrap();
        copies.push(copy);
    }
    let addresses: Vec<_> = copies.iter().map(HttpToolweave::address).collect();
    let http = toolweave_testkit::http::client();
    for address in &addresses {
        wait_for(&http, &format!("http://{address}/readyz"), 200, dir.path()).await;
    }
    let (_balancer, port) = start_balancer(
        Balancer::HaProxyShared,
        &haproxy,
        dir.path(),
        &addresses,
        &http,
    )
    .await;
    let killed = copies[1].process_id().unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let script = repo_root().join("tests/python/sdk_copies.py");
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python)
            .arg(script)
            .arg(toolweave())
            .arg(url)
            .arg(killed.to_string())
            .arg(mode)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let logs: Vec<String> = copies.iter().map(HttpToolweave::stderr).collect();
    assert!(
        output.status.success() && stdout.contains("sdk_copies: ok"),
        "stdout:\n{stdout}\nstderr:\n{stderr}\ncopies:\n{}{}",
        logs.join("\n----\n"),
        said(dir.path())
    );
    eprintln!("{stdout}");
    // Retries did land on copies that did not hold their executions, and were handed over.
    let handed_over: usize = logs
        .iter()
        .map(|log| {
            log.matches("a retry is handed over to the copy that holds")
                .count()
        })
        .sum();
    assert!(
        handed_over >= 2 || mode == "legacy",
        "{handed_over} retries handed over:\n{}",
        logs.join("\n----\n")
    );
    // Requests about a task did land on copies that did not run it, and were sent on.
    let sent_on: usize = logs
        .iter()
        .map(|log| {
            log.matches("a task's request is sent on to the copy that runs it")
                .count()
        })
        .sum();
    assert!(
        sent_on >= 2 || mode == "legacy",
        "{sent_on} task requests sent on:\n{}",
        logs.join("\n----\n")
    );
    assert!(
        copies[1].try_wait().unwrap().is_some(),
        "the killed copy still runs"
    );
}

/// One `tools/call` of `execute_code` with `arguments`, standing alone (`--stateless`); its
/// result.
async fn call(http: &reqwest::Client, url: &str, arguments: Value) -> Value {
    let response = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "execute_code", "arguments": arguments}})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    let body = response.text().await.unwrap();
    let answer: Value = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .chain(std::iter::once(body.as_str()))
        .find_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .unwrap_or_else(|| panic!("no JSON-RPC answer in {body}"));
    answer["result"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_that_is_down_fails_what_needs_it_and_the_copy_serves_on() {
    let test = "a copy whose --state is down";
    let Some((redis, _)) = programs(test) else {
        return;
    };
    let redis_port = free_port();
    let state = format!("redis://127.0.0.1:{redis_port}/0");
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let copy = HttpToolweave::start(
        toolweave(),
        &config,
        &["--state", &state, "--stateless"],
        &[],
    )
    .await
    .unwrap();
    let http = toolweave_testkit::http::client();
    let started = Instant::now();
    let result = call(
        &http,
        &copy.url(),
        json!({"code": "return await tools.fixture.add({ a: 1, b: 2 })"}),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // The execution is answered; the handle it would carry cannot be made, and the answer says
    // where the state is and what to do.
    assert_eq!(
        result["structuredContent"]["result"],
        json!("3"),
        "{result}"
    );
    assert!(
        result["structuredContent"].get("session").is_none(),
        "{result}"
    );
    let warnings = result["structuredContent"]["warnings"].to_string();
    assert!(
        warnings.contains(&format!(
            "the state backend at {state} (--state) failed while"
        )) && warnings.contains("Check that Redis or Valkey runs there and answers"),
        "{result}"
    );

    // Once Redis answers, the copy reads the shared key and keeps state there.
    let _redis = start_redis(&redis, redis_port).await;
    let until = Instant::now() + Duration::from_secs(15);
    let session = loop {
        let result = call(
            &http,
            &copy.url(),
            json!({"code": "await store.set(\"k\", 7); return 1"}),
        )
        .await;
        if let Some(session) = result["structuredContent"]["session"].as_str() {
            break session.to_owned();
        }
        assert!(
            Instant::now() < until,
            "no session handle once Redis runs: {result}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let result = call(
        &http,
        &copy.url(),
        json!({"code": "return await store.get(\"k\")", "session": session}),
    )
    .await;
    assert_eq!(result["structuredContent"]["result"], json!(7), "{result}");
}
