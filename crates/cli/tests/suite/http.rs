//! `toolweave serve --http`: sessions side by side, the checks on who may connect (bind rule,
//! bearer token, Host and Origin), a graceful end on SIGTERM, and the official conformance suite.

use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};
use toolweave_testkit::harness::fixture_config;
use toolweave_testkit::http::{HttpToolweave, raw_exchange};

use super::toolweave;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

/// A raw `initialize` POST with the given extra headers; the status and body.
async fn raw_initialize(url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut request = toolweave_testkit::http::client()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(INITIALIZE);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// The fixture servers a gateway has started, by process id.
fn fixture_children(gateway: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if toolweave_testkit::harness::parent_process(pid) == Some(gateway)
            && String::from_utf8_lossy(&cmdline).contains("toolweave-fixture")
        {
            children.push(pid);
        }
    }
    children
}

/// Whether the process runs (a zombie does not).
fn is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        })
        .unwrap_or(false)
}

/// Waits until the gateway has started its fixture servers; their process ids.
async fn wait_for_fixtures(gateway: u32, count: usize) -> Vec<u32> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let children = fixture_children(gateway);
        if children.len() >= count {
            return children;
        }
        assert!(Instant::now() < until, "upstream servers did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_run_side_by_side_and_cancel_alone() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = HttpToolweave::start(toolweave(), &config, &["--timeout-ms", "60000"], &[])
        .await
        .unwrap();
    let first = server.connect(None).await.unwrap();
    let second = server.connect(None).await.unwrap();
    assert_eq!(first.list_tools().await.unwrap().len(), 3);

    // The first session starts a long call and cancels it; the second's call is untouched.
    let Value::Object(arguments) = json!({
        "code": "await tools.fixture.slow({ ms: 30000 })", "language": "javascript"
    }) else {
        unreachable!("a literal object");
    };
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("execute_code").with_arguments(arguments),
    ));
    let cancelled = first
        .client()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let kept = tokio::spawn(async move {
        let result = second
            .execute(
                "const r = await tools.fixture.slow({ ms: 400 }); return [r, await tools.fixture.add({ a: 2, b: 3 })]",
                "javascript",
            )
            .await
            .unwrap();
        (second, result)
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    cancelled
        .cancel(Some("changed my mind".into()))
        .await
        .unwrap();
    let (second, result) = kept.await.unwrap();
    assert_eq!(
        result.value().unwrap(),
        &json!(["done", "5"]),
        "{}",
        result.text
    );

    // The upstream heard of the first session's cancellation, and of nothing else.
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let counts = second
            .execute("(await tools.fixture.stats({})).slow", "javascript")
            .await
            .unwrap();
        let counts = counts.value().unwrap().clone();
        if counts["cancelled"] == 1 {
            assert_eq!(counts["finished"], 1, "{counts}");
            break;
        }
        assert!(
            Instant::now() < until,
            "the cancellation never reached upstream: {counts}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Both sessions keep working.
    let again = first.execute("return 6 * 7", "typescript").await.unwrap();
    assert_eq!(again.value().unwrap(), &json!(42));
    let python = second.execute("6 * 7", "python").await.unwrap();
    assert_eq!(python.value().unwrap(), &json!(42));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_host_and_origin_are_checked() {
    const TOKEN: &str = "tw-test-token-5d1f0c";
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = HttpToolweave::start(
        toolweave(),
        &config,
        &["--auth-token-env", "TW_TEST_TOKEN"],
        &[("TW_TEST_TOKEN", TOKEN)],
    )
    .await
    .unwrap();
    let url = server.url();
    let bearer = format!("Bearer {TOKEN}");

    let (status, body) = raw_initialize(&url, &[]).await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("Authorization: Bearer"), "{body}");
    let (status, body) = raw_initialize(&url, &[("authorization", "Bearer wrong")]).await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("does not match"), "{body}");
    assert!(!body.contains(TOKEN), "{body}");
    let (status, _) = raw_initialize(&url, &[("authorization", &format!("Basic {TOKEN}"))]).await;
    assert_eq!(status, 401);

    // DNS rebinding: a page on another name reaching this port, or another origin.
    let (status, body) = raw_initialize(
        &url,
        &[("authorization", &bearer), ("host", "attacker.example")],
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = raw_initialize(
        &url,
        &[
            ("authorization", &bearer),
            ("origin", "https://attacker.example"),
        ],
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let port = server.address().port();
    let (status, body) = raw_initialize(
        &url,
        &[
            ("authorization", &bearer),
            ("origin", &format!("http://localhost:{port}")),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = raw_initialize(&url, &[("authorization", &bearer)]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"serverInfo\""), "{body}");

    let other = url.replace("/mcp", "/other");
    let response = toolweave_testkit::http::client()
        .get(&other)
        .header("authorization", &bearer)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    assert!(response.text().await.unwrap().contains("/mcp"));

    // A client with the token works end to end.
    assert!(server.connect(None).await.is_err(), "no token, no session");
    let client = server.connect(Some(TOKEN)).await.unwrap();
    let result = client
        .execute(
            "return await tools.fixture.add({ a: 40, b: 2 })",
            "typescript",
        )
        .await
        .unwrap();
    assert_eq!(result.value().unwrap(), &json!("42"), "{}", result.text);
    assert!(
        !server.stderr().contains(TOKEN),
        "the token reached the log"
    );
}

#[test]
fn an_open_address_needs_a_token_and_a_named_token_must_be_set() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let output = std::process::Command::new(toolweave())
        .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
        .args(["serve", "--http", "0.0.0.0:0", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("refusing to serve on 0.0.0.0:0 without an auth token"),
        "{stderr}"
    );
    assert!(stderr.contains("--auth-token-env"), "{stderr}");

    let output = std::process::Command::new(toolweave())
        .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--auth-token-env",
            "TW_NOT_SET_ANYWHERE",
        ])
        .arg("--config")
        .arg(&config)
        .env_remove("TW_NOT_SET_ANYWHERE")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("TW_NOT_SET_ANYWHERE is not set"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_running_executions_finish_then_stops_everything() {
    let (_dir, config) = fixture_config(&["one", "two"]).unwrap();
    let mut server = HttpToolweave::start(toolweave(), &config, &[], &[])
        .await
        .unwrap();
    let gateway = server.process_id().unwrap();
    let client = server.connect(None).await.unwrap();
    let running = tokio::spawn(async move {
        client
            .execute("return await tools.one.slow({ ms: 600 })", "javascript")
            .await
    });
    let fixtures = wait_for_fixtures(gateway, 2).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    let status = server.terminate(Duration::from_secs(15)).await.unwrap();
    assert!(status.success(), "{status}: {}", server.stderr());
    let result = running.await.unwrap().unwrap();
    assert_eq!(result.value().unwrap(), &json!("done"), "{}", result.text);
    for pid in fixtures {
        assert!(
            !is_running(pid),
            "upstream server {pid} outlived the gateway"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_serving_also_ends_cleanly_on_sigterm() {
    let (_dir, config) = fixture_config(&["one"]).unwrap();
    let server = toolweave_testkit::harness::Toolweave::start(toolweave(), &config, &[])
        .await
        .unwrap();
    let gateway = server.process_id().unwrap();
    let ok = server.execute("return 1 + 1", "typescript").await.unwrap();
    assert_eq!(ok.value().unwrap(), &json!(2));
    let fixtures = wait_for_fixtures(gateway, 1).await;
    let status = std::process::Command::new("kill")
        .args(["-TERM", &gateway.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let until = Instant::now() + Duration::from_secs(15);
    while is_running(gateway) {
        assert!(
            Instant::now() < until,
            "toolweave serve kept running after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for pid in fixtures {
        assert!(
            !is_running(pid),
            "upstream server {pid} outlived the gateway"
        );
    }
}

/// The official MCP conformance suite (`tests/conformance`, installed by `.ci/run`), with the
/// scenarios that do not apply to a gateway listed in `tests/conformance/expected-failures.yml`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_conformance_suite_passes() {
    let Some(suite) = super::conformance::installed(
        "the_official_conformance_suite_passes",
        "@modelcontextprotocol/conformance",
    ) else {
        return;
    };
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = HttpToolweave::start(toolweave(), &config, &[], &[])
        .await
        .unwrap();
    let arguments = [
        "server".to_owned(),
        "--url".to_owned(),
        server.url(),
        "--expected-failures".to_owned(),
        suite
            .folder
            .join("expected-failures.yml")
            .display()
            .to_string(),
        "--output-dir".to_owned(),
        dir.path().join("results").display().to_string(),
    ];
    let summary = suite.run(&arguments, &[], "=== SUMMARY ===").await;
    for scenario in [
        "server-initialize",
        "ping",
        "tools-list",
        "logging-set-level",
        "tools-call-error",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ] {
        assert!(
            summary
                .lines()
                .any(|line| line.contains(&format!("✓ {scenario}:"))),
            "{scenario} did not pass:\n{summary}"
        );
    }
    eprintln!("{summary}");
}

/// The gateway's resident memory, in KiB.
fn resident_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Runs `executions` executions spread over the sessions, all sessions at once; each asks the
/// upstream to add numbers only that request knows, so a lost or crossed answer shows.
async fn load(
    sessions: &[std::sync::Arc<toolweave_testkit::harness::Toolweave>],
    executions: usize,
    salt: u64,
) {
    let tasks = sessions.iter().enumerate().map(|(client, session)| {
        let session = session.clone();
        let rounds = executions / sessions.len() + usize::from(client < executions % sessions.len());
        tokio::spawn(async move {
            for round in 0..rounds {
                let a = salt * 1_000_000 + client as u64 * 10_000;
                let b = round as u64;
                let code = format!(
                    "return {{ sum: await tools.fixture.add({{ a: {a}, b: {b} }}), client: {client} }}"
                );
                let result = session.execute(&code, "javascript").await.unwrap();
                let value = result.value().unwrap_or_else(|_| panic!("{}", result.text));
                assert_eq!(value, &json!({ "sum": (a + b).to_string(), "client": client }), "mismatched answer");
            }
        })
    });
    for task in futures::future::join_all(tasks).await {
        task.unwrap();
    }
}

/// 64 clients at once, 10,000 executions in all: every answer arrives and is the right one, and
/// the gateway's memory after the load has not grown by more than the allocator's noise (4 MiB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_clients_ten_thousand_executions() {
    const CLIENTS: usize = 64;
    const EXECUTIONS: usize = 10_000;
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = HttpToolweave::start(toolweave(), &config, &[], &[])
        .await
        .unwrap();
    let gateway = server.process_id().unwrap();
    let mut sessions = Vec::new();
    for _ in 0..CLIENTS {
        sessions.push(std::sync::Arc::new(server.connect(None).await.unwrap()));
    }
    // Warm up: every session, the worker pools and the upstream connection in use, and the
    // allocator's pools grown to what 64 executions at once need: RSS rises over the first
    // executions, then moves up and down without a trend (docs/benchmarks.md, "Figures behind
    // choices in the code", has the figures that set these counts and the 4 MiB bound).
    load(&sessions, 2_560, 1).await;
    load(&sessions, 5_000, 3).await;
    let before = resident_kib(gateway);
    let started = Instant::now();
    load(&sessions, EXECUTIONS, 2).await;
    let elapsed = started.elapsed();
    let after = resident_kib(gateway);
    eprintln!(
        "{EXECUTIONS} executions by {CLIENTS} clients in {:.1} s; gateway RSS {before} KiB before, {after} KiB after",
        elapsed.as_secs_f64()
    );
    assert!(
        after <= before + 4 * 1024,
        "gateway RSS went from {before} KiB to {after} KiB: more than 400 bytes kept per execution"
    );
}

/// `--rate-limit`: each session has its own allowance; past it, an execution is refused with the
/// time to wait, and other sessions are untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_limit_is_per_session() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = HttpToolweave::start(toolweave(), &config, &["--rate-limit", "2"], &[])
        .await
        .unwrap();
    let first = server.connect(None).await.unwrap();
    let second = server.connect(None).await.unwrap();
    for _ in 0..2 {
        let ok = first.execute("return 1", "javascript").await.unwrap();
        assert_eq!(ok.value().unwrap(), &json!(1));
    }
    let refused = first.execute("return 1", "javascript").await.unwrap();
    assert!(refused.is_error, "{}", refused.text);
    assert!(refused.text.contains("RateLimit"), "{}", refused.text);
    assert!(refused.text.contains("try again in"), "{}", refused.text);
    let wait = refused.structured["error"]["retryAfterMs"]
        .as_u64()
        .unwrap();
    assert!((1..=30_000).contains(&wait), "{wait}");
    for _ in 0..2 {
        let ok = second.execute("return 2", "javascript").await.unwrap();
        assert_eq!(ok.value().unwrap(), &json!(2), "{}", ok.text);
    }
}

/// `--allowed-host` and `--allowed-origin` admit a name and an origin beyond this machine's, and
/// nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_hosts_and_origins_can_be_allowed() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = HttpToolweave::start(
        toolweave(),
        &config,
        &[
            "--allowed-host",
            "gateway.internal",
            "--allowed-origin",
            "https://app.example.com:443",
        ],
        &[],
    )
    .await
    .unwrap();
    let url = server.url();
    let port = server.address().port();
    let host = format!("gateway.internal:{port}");
    let (status, body) = raw_initialize(&url, &[("host", &host)]).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = raw_initialize(&url, &[("host", &format!("other.internal:{port}"))]).await;
    assert_eq!(status, 403);
    let (status, body) = raw_initialize(&url, &[("origin", "https://app.example.com")]).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = raw_initialize(&url, &[("origin", "https://evil.example.com")]).await;
    assert_eq!(status, 403);
}

/// Over HTTP every request gets an answer that says what is wrong: a DELETE of a session that
/// does not exist 404 (as MCP asks), of one that does 200, a body framed both ways 400, one too long 413, a request that is no message
/// toolweave can serve 400 with its JSON-RPC error (addressed to its id), and a request with a
/// lone surrogate escape is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_http_request_gets_an_answer() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = HttpToolweave::start(toolweave(), &config, &[], &[])
        .await
        .unwrap();
    let url = server.url();
    let client = toolweave_testkit::http::client();

    let response = client
        .delete(&url)
        .header("mcp-session-id", "no-such-session")
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    assert_eq!(
        response.text().await.unwrap(),
        "toolweave: no such session (it ended, or never began); start a new one with initialize\n"
    );

    // Content-Length and chunked Transfer-Encoding on one body sent by its length.
    let body = INITIALIZE.as_bytes();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nTransfer-Encoding: chunked\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    let (status, text) = raw_exchange(server.address(), &request).await.unwrap();
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("toolweave: the request body could not be read (Invalid chunk size line"),
        "{text}"
    );

    // A body over 8 MiB is not read to its end.
    let response = client
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(vec![b' '; 9 * 1024 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 413);
    assert_eq!(
        response.text().await.unwrap(),
        "toolweave: a request body is at most 8 MiB (8388608 bytes); send less in one request\n"
    );

    // A session to send requests in.
    let response = client
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(INITIALIZE)
        .send()
        .await
        .unwrap();
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let post = |body: &'static str| {
        client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .body(body)
            .send()
    };
    let status = post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await
        .unwrap()
        .status();
    assert_eq!(status.as_u16(), 202);
    for (body, answer) in [
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":[1,2]}"#,
            json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32602,
                "message": "the params of \"tools/call\" must be a JSON object, not an array"}}),
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"ping""#,
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32700,
                "message": "the message is not valid JSON: EOF while parsing an object at line 1 column 39"}}),
        ),
    ] {
        let response = post(body).await.unwrap();
        assert_eq!(response.status().as_u16(), 400, "{body}");
        let text = response.text().await.unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            answer,
            "{text}"
        );
    }
    // Params that do not fit the method: rmcp answers in the stream, with -32602.
    let response = post(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"nam":"x"}}"#)
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    assert!(
        text.contains(r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"invalid params for \"tools/call\": missing field `name`"#),
        "{text}"
    );
    let response = post(
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"describe_tools","arguments":{"names":["fixture.add\ud83d"]}}}"#,
    )
    .await
    .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let text = response.text().await.unwrap();
    assert!(
        text.contains(r#""unknown":[["fixture.add�",["fixture.add"]]]"#),
        "{text}"
    );
    // The session still serves.
    let connected = server.connect(None).await.unwrap();
    assert_eq!(connected.list_tools().await.unwrap().len(), 3);

    // Ending the session answers 200, as the SDKs expect (the official Python SDK logs
    // "Session termination failed" for 202); it is gone then.
    let delete = || {
        client
            .delete(&url)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .send()
    };
    assert_eq!(delete().await.unwrap().status().as_u16(), 200);
    assert_eq!(delete().await.unwrap().status().as_u16(), 404);
}
