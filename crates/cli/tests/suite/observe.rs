//! Watching a running gateway: `/healthz` and `/readyz` (open to probes, revealing no secret),
//! `--metrics` scraped by a real Prometheus, `--otlp-endpoint` traces received and decoded as a
//! collector would, the drain after SIGTERM as `/readyz` shows it, and `--stateless` serving.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use rmcp::model::{CallToolRequestParams, RequestMetaObject};
use serde_json::{Value, json};
use toolweave_testkit::harness::{Execution, Toolweave, fixture_config};
use toolweave_testkit::http::HttpToolweave;

use super::{toolweave, which};

/// A port free on loopback a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap()
}

/// A config with the fixture server and one that cannot start, whose entry holds a secret.
fn config_with_a_broken_server() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("mcp.json");
    let config = json!({
        "mcpServers": {
            "fixture": { "command": toolweave_testkit::fixture_binary() },
            "broken": {
                "command": "/nonexistent/toolweave-secret-path",
                "env": { "API_KEY": "s3cret-in-env" },
            },
        }
    });
    std::fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
    (dir, path)
}

/// GET `url`, with a bearer token when given: status, content type and body.
async fn get(url: &str, token: Option<&str>) -> (u16, String, String) {
    let mut request = toolweave_testkit::http::client().get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, content_type, response.text().await.unwrap())
}

/// Polls `/readyz` until its `status` is `want`; the last body.
async fn readyz_until(base: &str, want: &str, code: u16) -> Value {
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        let (status, _, body) = get(&format!("{base}/readyz"), None).await;
        let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        if body["status"] == want {
            assert_eq!(status, code, "{body}");
            return body;
        }
        assert!(
            Instant::now() < until,
            "/readyz never said {want:?}: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The value of the sample `line` (a metric name with its labels, as written) in `text`.
fn sample(text: &str, line: &str) -> Option<f64> {
    text.lines()
        .find_map(|candidate| candidate.strip_prefix(line)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_probes_without_the_token_and_names_servers_only() {
    let (_dir, config) = config_with_a_broken_server();
    let server = HttpToolweave::start(
        toolweave(),
        &config,
        &["--auth-token-env", "TW_TEST_TOKEN", "--metrics"],
        &[("TW_TEST_TOKEN", "probe-token-value")],
    )
    .await
    .unwrap();
    let base = format!("http://{}", server.address());

    let (status, content_type, body) = get(&format!("{base}/healthz"), None).await;
    assert_eq!((status, content_type.as_str()), (200, "application/json"));
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"status": "alive"})
    );

    let body = readyz_until(&base, "ready", 200).await;
    assert_eq!(
        body,
        json!({
            "status": "ready",
            "servers": { "ready": ["fixture"], "starting": [], "failed": ["broken"], "stopped": [] },
        })
    );
    let text = body.to_string();
    for secret in ["s3cret", "nonexistent", "probe-token-value", "API_KEY"] {
        assert!(!text.contains(secret), "/readyz shows {secret:?}: {text}");
    }

    // Metrics and MCP need the token; the health paths alone do not.
    let (status, _, _) = get(&format!("{base}/metrics"), None).await;
    assert_eq!(status, 401);
    let (status, _, _) = get(&format!("{base}/mcp"), None).await;
    assert_eq!(status, 401);
    let (status, content_type, _) =
        get(&format!("{base}/metrics"), Some("probe-token-value")).await;
    assert_eq!(status, 200);
    assert!(content_type.starts_with("application/openmetrics-text"));
}

/// Every metric the gateway keeps, read on the main listener after executions of each kind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_executions_tool_calls_states_workers_sessions_and_refusals() {
    let (_dir, config) = config_with_a_broken_server();
    let server = HttpToolweave::start(
        toolweave(),
        &config,
        &["--metrics", "--rate-limit", "3"],
        &[],
    )
    .await
    .unwrap();
    let base = format!("http://{}", server.address());
    let session = server.connect(None).await.unwrap();
    let ok = session
        .execute(
            "return await tools.fixture.add({ a: 1, b: 2 })",
            "javascript",
        )
        .await
        .unwrap();
    assert_eq!(ok.value().unwrap(), &json!("3"), "{}", ok.text);
    let thrown = session
        .execute("throw new Error('on purpose')", "javascript")
        .await
        .unwrap();
    assert_eq!(thrown.error_kind(), Some("GuestError"));
    let python = session
        .execute(
            "try:\n    await tools.broken.anything()\nexcept Exception:\n    pass\n'done'",
            "python",
        )
        .await
        .unwrap();
    assert_eq!(python.value().unwrap(), &json!("done"), "{}", python.text);
    let refused = session.execute("return 1", "javascript").await.unwrap();
    assert_eq!(refused.error_kind(), Some("RateLimit"), "{}", refused.text);

    let (status, _, text) = get(&format!("{base}/metrics"), None).await;
    assert_eq!(status, 200);
    let expected = [
        (
            r#"toolweave_executions_total{language="javascript",outcome="ok"}"#,
            1.0,
        ),
        (
            r#"toolweave_executions_total{language="javascript",outcome="GuestError"}"#,
            1.0,
        ),
        (
            r#"toolweave_executions_total{language="python",outcome="ok"}"#,
            1.0,
        ),
        (
            r#"toolweave_execution_duration_seconds_count{language="javascript"}"#,
            2.0,
        ),
        (
            r#"toolweave_tool_calls_total{server="fixture",outcome="ok"}"#,
            1.0,
        ),
        (
            r#"toolweave_tool_calls_total{server="broken",outcome="error"}"#,
            1.0,
        ),
        (
            r#"toolweave_tool_call_duration_seconds_count{server="fixture"}"#,
            1.0,
        ),
        (
            r#"toolweave_upstream_server_state{server="fixture",state="ready"}"#,
            1.0,
        ),
        (
            r#"toolweave_upstream_server_state{server="fixture",state="failed"}"#,
            0.0,
        ),
        (
            r#"toolweave_upstream_server_state{server="broken",state="failed"}"#,
            1.0,
        ),
        (r#"toolweave_workers{kind="javascript",state="busy"}"#, 0.0),
        // The session's worker of each kind waits for its next execution (both JavaScript
        // executions ran in the same one).
        (r#"toolweave_workers{kind="javascript",state="kept"}"#, 1.0),
        (r#"toolweave_workers{kind="python",state="kept"}"#, 1.0),
        ("toolweave_sessions_open", 1.0),
        ("toolweave_rate_limit_refusals_total", 1.0),
    ];
    for (line, value) in expected {
        assert_eq!(sample(&text, line), Some(value), "{line} in:\n{text}");
    }
    let waiting = sample(&text, r#"toolweave_workers{kind="python",state="waiting"}"#);
    assert!(waiting.is_some_and(|waiting| waiting >= 1.0), "{text}");
    assert!(!text.contains("s3cret"), "{text}");
}

/// A real Prometheus (Debian's `prometheus`) scrapes `--metrics-address` of a gateway serving over
/// stdio, and its query API returns the execution counter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_the_execution_counter() {
    let Some(prometheus) = which("prometheus") else {
        toolweave_testkit::skip::missing_prerequisite(
            "prometheus_scrapes_the_execution_counter",
            "the `prometheus` program is not installed (apt-get install prometheus)",
        );
        return;
    };
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let metrics_port = free_port();
    let metrics_address = format!("127.0.0.1:{metrics_port}");
    let gateway = Toolweave::start(
        toolweave(),
        &config,
        &["--metrics-address", &metrics_address],
    )
    .await
    .unwrap();
    for b in [1, 2] {
        let result = gateway
            .execute(
                &format!("return await tools.fixture.add({{ a: 1, b: {b} }})"),
                "typescript",
            )
            .await
            .unwrap();
        assert_eq!(
            result.value().unwrap(),
            &json!((1 + b).to_string()),
            "{}",
            result.text
        );
    }

    let web_port = free_port();
    let prometheus_config = dir.path().join("prometheus.yml");
    std::fs::write(
        &prometheus_config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: toolweave\n    static_configs:\n      - targets: ['{metrics_address}']\n"
        ),
    )
    .unwrap();
    let _prometheus = tokio::process::Command::new(prometheus)
        .arg(format!("--config.file={}", prometheus_config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{web_port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let query = format!(
        "http://127.0.0.1:{web_port}/api/v1/query?query=toolweave_executions_total%7Boutcome%3D%22ok%22%7D"
    );
    let until = Instant::now() + Duration::from_secs(30);
    let answer = loop {
        if let Ok(response) = toolweave_testkit::http::client().get(&query).send().await
            && let Ok(answer) = response.json::<Value>().await
            && answer["data"]["result"]
                .as_array()
                .is_some_and(|result| !result.is_empty())
        {
            break answer;
        }
        assert!(
            Instant::now() < until,
            "Prometheus never had toolweave_executions_total"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let result = &answer["data"]["result"][0];
    assert_eq!(result["metric"]["language"], "typescript", "{answer}");
    assert_eq!(result["metric"]["job"], "toolweave", "{answer}");
    assert_eq!(result["value"][1], "2", "{answer}");
}

/// An OTLP/HTTP receiver: every span of every export it is sent.
struct Receiver {
    address: SocketAddr,
    spans: Arc<Mutex<Vec<Span>>>,
}

impl Receiver {
    async fn start() -> Self {
        let spans: Arc<Mutex<Vec<Span>>> = Arc::default();
        let kept = spans.clone();
        let router = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: axum::body::Bytes| {
                let kept = kept.clone();
                async move {
                    let request = ExportTraceServiceRequest::decode(body).unwrap();
                    let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
                    for resource in request.resource_spans {
                        for scope in resource.scope_spans {
                            kept.extend(scope.spans);
                        }
                    }
                    // An empty ExportTraceServiceResponse.
                    (
                        [("content-type", "application/x-protobuf")],
                        Vec::<u8>::new(),
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self { address, spans }
    }

    /// Waits until a span named `name` in trace `trace_id` arrived; it.
    async fn span(&self, name: &str, trace_id: &[u8]) -> Span {
        let until = Instant::now() + Duration::from_secs(15);
        loop {
            let found = self
                .spans
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .find(|span| span.name == name && span.trace_id == trace_id)
                .cloned();
            if let Some(span) = found {
                return span;
            }
            assert!(
                Instant::now() < until,
                "no {name} span in trace {trace_id:02x?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    span.attributes
        .iter()
        .find(|attribute| attribute.key == key)
        .and_then(|attribute| attribute.value.as_ref()?.value.as_ref())
        .map(|value| match value {
            Any::StringValue(text) => text.clone(),
            other => format!("{other:?}"),
        })
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).unwrap())
        .collect()
}

/// `execute_code` with W3C trace context in `_meta`.
async fn execute_in_trace(gateway: &Toolweave, code: &str, traceparent: Option<&str>) -> Execution {
    let arguments = json!({ "code": code, "language": "javascript" });
    let Value::Object(arguments) = arguments else {
        unreachable!()
    };
    let mut params = CallToolRequestParams::new("execute_code").with_arguments(arguments);
    if let Some(traceparent) = traceparent {
        let mut meta = RequestMetaObject::default();
        meta.insert("traceparent".to_owned(), json!(traceparent));
        params.meta = Some(meta);
    }
    Execution::from_result(gateway.client().call_tool(params).await.unwrap()).unwrap()
}

/// Traces reach an OTLP receiver: the execution's span in the caller's trace (from `traceparent`
/// in `_meta`), its tool call under it, and the upstream request under that, whose context the
/// upstream server is sent in its request's `_meta`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_join_the_callers_trace_and_reach_the_collector() {
    let receiver = Receiver::start().await;
    let (_dir, config, recorded) = super::face::recording_config();
    let endpoint = format!("http://{}", receiver.address);
    let (client, process_id) = toolweave_testkit::harness::serve_with(
        toolweave(),
        &config,
        &["--otlp-endpoint", &endpoint],
        &[("OTEL_BSP_SCHEDULE_DELAY", "100")],
        (),
    )
    .await
    .unwrap();
    let gateway = Toolweave::from_client(client, process_id);
    let caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let traceparent = format!("00-{caller_trace}-{caller_span}-01");
    let result = execute_in_trace(
        &gateway,
        "return await tools.fixture.add({ a: 2, b: 3 })",
        Some(&traceparent),
    )
    .await;
    assert_eq!(result.value().unwrap(), &json!("5"), "{}", result.text);

    let trace_id = hex(caller_trace);
    let execution = receiver.span("execute_code", &trace_id).await;
    assert_eq!(execution.parent_span_id, hex(caller_span));
    assert_eq!(
        attribute(&execution, "language").as_deref(),
        Some("javascript")
    );
    assert_eq!(attribute(&execution, "outcome").as_deref(), Some("ok"));
    let call = receiver.span("tool call", &trace_id).await;
    assert_eq!(call.parent_span_id, execution.span_id);
    assert_eq!(attribute(&call, "tool").as_deref(), Some("fixture.add"));
    assert_eq!(attribute(&call, "server").as_deref(), Some("fixture"));
    let request = receiver.span("tools/call", &trace_id).await;
    assert_eq!(request.parent_span_id, call.span_id);
    assert_eq!(attribute(&request, "tool").as_deref(), Some("add"));
    assert!(execution.start_time_unix_nano <= call.start_time_unix_nano);
    assert!(call.end_time_unix_nano <= execution.end_time_unix_nano);
    // The upstream server was sent the upstream request's span as its parent, in the same trace.
    let sent = std::fs::read_to_string(&recorded).unwrap();
    let sent: Value = serde_json::from_str(sent.lines().last().unwrap()).unwrap();
    assert_eq!(
        sent["meta"]["traceparent"],
        json!(format!(
            "00-{caller_trace}-{}-01",
            request
                .span_id
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect::<String>()
        )),
        "{sent}"
    );

    // Without trace context an execution starts a trace of its own; a failed one says so.
    let failed = execute_in_trace(&gateway, "throw new Error('no')", None).await;
    assert_eq!(failed.error_kind(), Some("GuestError"));
    let until = Instant::now() + Duration::from_secs(15);
    let own = loop {
        let found = receiver
            .spans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|span| span.name == "execute_code" && span.trace_id != trace_id)
            .cloned();
        if let Some(span) = found {
            break span;
        }
        assert!(
            Instant::now() < until,
            "the second execution's span never came"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(own.parent_span_id.is_empty(), "{own:?}");
    assert_eq!(attribute(&own, "outcome").as_deref(), Some("GuestError"));
    // 2: STATUS_CODE_ERROR.
    assert_eq!(own.status.as_ref().map(|status| status.code), Some(2));
    gateway.stop().await.unwrap();
}

/// A raw MCP POST: status, headers and body.
async fn raw_post(
    url: &str,
    session: Option<&str>,
    message: Value,
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut request = toolweave_testkit::http::client()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(message.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

fn initialize_message() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
}

/// After SIGTERM, `/readyz` answers 503 `draining` at once; nothing new starts (a new session
/// gets 503, a request in a session here 404, which sends its client to a new session), while
/// notifications still reach their sessions and the running execution is answered before the
/// process ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draining_copy_says_so_starts_nothing_new_and_answers_what_runs() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let mut server = HttpToolweave::start(toolweave(), &config, &[], &[])
        .await
        .unwrap();
    let base = format!("http://{}", server.address());
    let url = server.url();
    readyz_until(&base, "ready", 200).await;
    let (status, headers, _) = raw_post(&url, None, initialize_message()).await;
    assert_eq!(status, 200);
    let raw_session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let session = Arc::new(server.connect(None).await.unwrap());
    let running = {
        let session = session.clone();
        tokio::spawn(async move {
            session
                .execute(
                    "return await tools.fixture.slow({ ms: 1500 })",
                    "javascript",
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let process_id = server.process_id().unwrap();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &process_id.to_string()])
        .status()
        .unwrap();
    assert!(status.success());

    let body = readyz_until(&base, "draining", 503).await;
    assert_eq!(body["servers"]["ready"], json!(["fixture"]));
    let (status, headers, body) = raw_post(&url, None, initialize_message()).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(
        headers
            .get("retry-after")
            .and_then(|value| value.to_str().ok()),
        Some("1")
    );
    let (status, _, body) = raw_post(
        &url,
        Some(&raw_session),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "execute_code", "arguments": {"code": "return 6 * 7"}}}),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("start a new session"), "{body}");
    let (status, _, body) = raw_post(
        &url,
        Some(&raw_session),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}),
    )
    .await;
    assert_eq!(status, 202, "{body}");

    let slow = running.await.unwrap().unwrap();
    assert_eq!(slow.value().unwrap(), &json!("done"), "{}", slow.text);
    let exited = server.terminate(Duration::from_secs(15)).await.unwrap();
    assert!(exited.success(), "{exited}: {}", server.stderr());
}

/// `--stateless`: every request stands alone; no session id is handed out, a call needs no
/// `initialize` first, and an answer with nothing before it is plain JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_requests_stand_alone() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = HttpToolweave::start(toolweave(), &config, &["--stateless", "--metrics"], &[])
        .await
        .unwrap();
    let url = server.url();
    let post = |body: Value| {
        toolweave_testkit::http::client()
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .body(body.to_string())
            .send()
    };
    let initialized = post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}))
    .await
    .unwrap();
    assert_eq!(initialized.status().as_u16(), 200);
    assert!(initialized.headers().get("mcp-session-id").is_none());

    let answer = post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "execute_code", "arguments": {"code": "return await tools.fixture.add({ a: 20, b: 22 })"}}}))
    .await
    .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    assert_eq!(
        answer
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok()),
        Some("application/json")
    );
    let answer: Value = answer.json().await.unwrap();
    assert_eq!(answer["id"], 2);
    assert_eq!(
        answer["result"]["structuredContent"]["result"], "42",
        "{answer}"
    );

    let (_, _, text) = get(&format!("http://{}/metrics", server.address()), None).await;
    assert_eq!(
        sample(&text, "toolweave_sessions_open"),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"toolweave_executions_total{language="typescript",outcome="ok"}"#
        ),
        Some(1.0),
        "{text}"
    );
}
