//! Identities over HTTP: several bearer tokens, each named in the settings file with rules of its
//! own set within the file's. Two tokens get different tiers for the same tool, neither can let
//! in what the file keeps out, a session opened with one token cannot be used with another, each
//! identity has its own rate, the audit log names the identity, and a mistake in an identity
//! stops `serve` with its name.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use toolweave_testkit::harness::{Toolweave, fixture_config};
use toolweave_testkit::http::HttpToolweave;

use super::toolweave;

const READER: &str = "tw-reader-token-1f9a3c";
const WRITER: &str = "tw-writer-token-7b2e55";

/// The settings: the file keeps `fixture.crash` out; `reader` cannot call `remove` and is asked
/// before `echo`; `writer` may call `remove` (marked destructive) without anyone being asked,
/// and its allowlist names `crash` in vain.
fn settings(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("settings.json");
    let settings = json!({
        "deny": ["fixture.crash"],
        "auditLog": "audit.jsonl",
        "identities": {
            "reader": {
                "tokenEnv": "TW_READER_TOKEN",
                "deny": ["fixture.remove"],
                "ask": ["fixture.echo"],
                "rateLimit": 4
            },
            "writer": {
                "tokenEnv": "TW_WRITER_TOKEN",
                "allow": ["fixture.*"],
                "approve": ["fixture.remove"]
            }
        }
    });
    std::fs::write(&path, settings.to_string()).unwrap();
    path
}

async fn start(dir: &Path, config: &Path) -> HttpToolweave {
    let settings = settings(dir);
    HttpToolweave::start(
        toolweave(),
        config,
        &[
            "--settings",
            settings.to_str().unwrap(),
            "--approval",
            "elicitation",
        ],
        &[("TW_READER_TOKEN", READER), ("TW_WRITER_TOKEN", WRITER)],
    )
    .await
    .unwrap()
}

async fn run(session: &Toolweave, code: &str) -> (Option<Value>, String) {
    let execution = session.execute(code, "javascript").await.unwrap();
    (execution.value().ok().cloned(), execution.text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tokens_get_the_tiers_of_their_identities() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = start(dir.path(), &config).await;
    let reader = server.connect(Some(READER)).await.unwrap();
    let writer = server.connect(Some(WRITER)).await.unwrap();

    // `remove`: the writer's approve rule pre-approves it; the reader's deny rule keeps it out.
    let remove = "return await tools.fixture.remove({ name: 'x' })";
    let (value, text) = run(&writer, remove).await;
    assert!(value.is_some(), "the writer's remove: {text}");
    let (value, text) = run(&reader, remove).await;
    assert!(value.is_none(), "the reader's remove went through: {text}");
    assert!(
        text.contains("identity \"reader\"") && text.contains("fixture.remove"),
        "{text}"
    );

    // `echo`: allowed for the writer; the reader's ask rule asks, and this client cannot be asked.
    let echo = "return await tools.fixture.echo({ message: 'hi' })";
    let (value, text) = run(&writer, echo).await;
    assert!(value.is_some(), "the writer's echo: {text}");
    let (value, text) = run(&reader, echo).await;
    assert!(value.is_none(), "the reader's echo was not asked: {text}");
    assert!(text.contains("ask rule \"fixture.echo\""), "{text}");

    // What the settings keep out stays out, whatever an identity's allowlist names.
    let (value, text) = run(&writer, "return await tools.fixture.crash({})").await;
    assert!(value.is_none(), "the writer called crash: {text}");

    // The audit log names the identity of each execution (written by a thread of its own, so
    // the last line may come a moment after the answer).
    let read = || std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap_or_default();
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while read().lines().count() < 5 && std::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let log = read();
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let named = |identity: &str| {
        lines
            .iter()
            .filter(|line| line["identity"] == json!(identity))
            .count()
    };
    assert_eq!(named("writer"), 3, "{log}");
    assert_eq!(named("reader"), 2, "{log}");
    let reader_remove = lines
        .iter()
        .find(|line| line["identity"] == json!("reader"))
        .unwrap();
    assert_eq!(reader_remove["deniedCalls"], json!(1), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_keeps_its_token_and_each_identity_its_rate() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = start(dir.path(), &config).await;
    let http = toolweave_testkit::http::client();
    let post = |token: &str, session: Option<&str>, body: Value| {
        let mut request = http
            .post(server.url())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {token}"))
            .header("mcp-protocol-version", "2025-06-18")
            .body(body.to_string());
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    let response = post(READER, None, initialize).await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|id| id.to_str().ok())
        .unwrap()
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(READER, Some(&session), initialized).await.unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "execute_code", "arguments": {"code": "return 1"}}});
    let answer = post(WRITER, Some(&session), call)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        answer.contains("opened with identity \\\"reader\\\"'s token")
            && answer.contains("identity \\\"writer\\\"'s token"),
        "the writer used the reader's session: {answer}"
    );
    assert!(!answer.contains("\"result\""), "{answer}");

    // The reader's rate (4 a minute) is shared by its sessions; the writer's is its own.
    let sessions = [
        server.connect(Some(READER)).await.unwrap(),
        server.connect(Some(READER)).await.unwrap(),
    ];
    let writer = server.connect(Some(WRITER)).await.unwrap();
    let mut refused = None;
    for attempt in 0..10 {
        let (value, text) = run(&sessions[attempt % 2], "return 1").await;
        if value.is_none() {
            refused = Some((attempt, text));
            break;
        }
    }
    let (attempt, text) = refused.expect("the reader was never limited");
    assert!(attempt >= 4, "refused after {attempt} executions: {text}");
    assert!(
        text.starts_with("RateLimit: identity \"reader\" may start 4 executions a minute"),
        "{text}"
    );
    let (value, text) = run(&writer, "return 2").await;
    assert_eq!(
        value,
        Some(json!(2)),
        "the writer shared the reader's rate: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identity_without_its_token_or_sharing_one_stops_serve_by_name() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let settings = settings(dir.path());
    let serve = |env: &[(&str, &str)]| {
        let mut command = std::process::Command::new(toolweave());
        command
            .args(["serve", "--http", "127.0.0.1:0", "--config"])
            .arg(&config)
            .arg("--settings")
            .arg(&settings)
            .env_remove("TW_READER_TOKEN")
            .env_remove("TW_WRITER_TOKEN")
            .envs(env.iter().copied());
        let output = tokio::task::spawn_blocking(move || command.output());
        async move {
            let output = tokio::time::timeout(Duration::from_secs(30), output)
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            (
                output.status.code(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        }
    };
    let (code, stderr) = serve(&[("TW_READER_TOKEN", READER)]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("identity \"writer\": the environment variable TW_WRITER_TOKEN"),
        "{stderr}"
    );
    let (code, stderr) = serve(&[("TW_READER_TOKEN", READER), ("TW_WRITER_TOKEN", READER)]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("identities \"reader\" and \"writer\" have the same token"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(READER),
        "a token reached the log: {stderr}"
    );
}
