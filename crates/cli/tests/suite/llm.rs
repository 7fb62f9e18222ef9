//! `llm.ask` and `llm.think`: answered by the MCP client's sampling (the official Python SDK
//! over stdio and HTTP, `tests/python/sdk_llm.py`), and by the settings' provider, an Anthropic
//! or OpenAI-compatible endpoint (fake ones on 127.0.0.1 here, which check the key and the body).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::Path as UrlPath;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use toolweave_testkit::harness::fixture_config;

use super::{run_sdk_script, toolweave};

/// The client's sampling callback answers `llm.ask` and `llm.think` in both languages, over
/// stdio and HTTP with worker isolation; the 11th round is refused naming --max-llm-rounds, a
/// request over the tokens left naming --max-llm-tokens; a client without sampling is told so;
/// the audit log holds hashes and sizes, not the texts.
#[test]
fn the_clients_model_answers_code_within_the_budgets() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let audit = dir.path().join("audit.jsonl");
    run_sdk_script("sdk_llm", &[config.as_os_str(), audit.as_os_str()]);
}

/// What a fake endpoint was sent: its path, headers and body.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    headers: HeaderMap,
    body: Value,
}

/// A fake LLM endpoint on 127.0.0.1. Under `/ok/` it answers as Anthropic's Messages API and as
/// an OpenAI-compatible chat completions API do; under `/fail/` with HTTP 500; under `/garbled/`
/// with a body that is not JSON.
struct Endpoint {
    address: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    _runtime: tokio::runtime::Runtime,
}

impl Endpoint {
    fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let kept = received.clone();
        let answer = move |scenario: String,
                           api: &'static str,
                           headers: HeaderMap,
                           body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                kept.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(Received {
                        path: format!("/{scenario}/{api}"),
                        headers,
                        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                    });
                match (scenario.as_str(), api) {
                    ("fail", _) => (
                        StatusCode::INTERNAL_SERVER_ERROR,
                        json!({"error": {"type": "overloaded_error", "message": "Overloaded"}})
                            .to_string(),
                    ),
                    ("garbled", _) => (StatusCode::OK, "<html>not json</html>".to_owned()),
                    (_, "v1/messages") => (
                        StatusCode::OK,
                        json!({
                            "id": "msg_1", "type": "message", "role": "assistant",
                            "model": "claude-test",
                            "content": [{"type": "text", "text": "Hi from "}, {"type": "text", "text": "Anthropic."}],
                            "stop_reason": "end_turn",
                            "usage": {"input_tokens": 12, "output_tokens": 5}
                        })
                        .to_string(),
                    ),
                    _ => (
                        StatusCode::OK,
                        json!({
                            "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-test",
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi from OpenAI."}, "finish_reason": "length"}],
                            "usage": {"prompt_tokens": 14, "completion_tokens": 4}
                        })
                        .to_string(),
                    ),
                }
            }
        };
        let router = axum::Router::new()
            .route(
                "/{scenario}/v1/messages",
                axum::routing::post({
                    let answer = answer.clone();
                    move |UrlPath(scenario): UrlPath<String>,
                          headers: HeaderMap,
                          body: axum::body::Bytes| {
                        answer(scenario, "v1/messages", headers, body)
                    }
                }),
            )
            .route(
                "/{scenario}/chat/completions",
                axum::routing::post(
                    move |UrlPath(scenario): UrlPath<String>,
                          headers: HeaderMap,
                          body: axum::body::Bytes| {
                        answer(scenario, "chat/completions", headers, body)
                    },
                ),
            );
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let address = listener.local_addr().unwrap();
        runtime.spawn(async move { axum::serve(listener, router).await });
        Self {
            address,
            received,
            _runtime: runtime,
        }
    }

    fn url(&self, scenario: &str) -> String {
        format!("http://{}/{scenario}", self.address)
    }

    fn take(&self) -> Vec<Received> {
        std::mem::take(&mut *self.received.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Runs `code` (TypeScript) with `toolweave run`, whose settings name the provider `llm`; the
/// value it printed, and its stderr.
fn run_with(dir: &Path, llm: Value, code: &str, env: &[(&str, &str)]) -> (Value, String) {
    run_with_settings(dir, json!({ "llm": llm }), &[], code, env)
}

/// Runs `code` (TypeScript) with `toolweave run` with these settings and flags.
fn run_with_settings(
    dir: &Path,
    settings: Value,
    flags: &[&str],
    code: &str,
    env: &[(&str, &str)],
) -> (Value, String) {
    let settings_file = dir.join("settings.json");
    std::fs::write(&settings_file, settings.to_string()).unwrap();
    let settings = settings_file;
    let program = dir.join("program.ts");
    std::fs::write(&program, code).unwrap();
    let config = dir.join("empty.json");
    std::fs::write(&config, r#"{"mcpServers": {}}"#).unwrap();
    let output = std::process::Command::new(toolweave())
        .arg("run")
        .arg(&program)
        .arg("--config")
        .arg(&config)
        .arg("--settings")
        .arg(&settings)
        .args(flags)
        .env_remove("ANTHROPIC_TEST_KEY")
        .env_remove("OPENAI_TEST_KEY")
        .envs(env.iter().copied())
        .env("TOOLWEAVE_LOG", "trace")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (serde_json::from_str(&stdout).unwrap(), stderr)
}

const THINK: &str = r#"return await llm.think({
  messages: [{ role: "user", content: "Hello?" }],
  system: "Be brief.",
  maxTokens: 64,
  model: "a-hint",
})"#;

const CAUGHT: &str =
    r#"try { return await llm.ask("Hello?") } catch (error) { return error.message }"#;

/// An Anthropic Messages endpoint gets the key in `x-api-key`, the version header and the
/// request as the API takes it; its answer's text blocks, model and stop reason reach code. The
/// key appears in no log line.
#[test]
fn an_anthropic_endpoint_answers_when_the_client_cannot_sample() {
    let endpoint = Endpoint::start();
    let dir = tempfile::tempdir().unwrap();
    let provider = json!({"kind": "anthropic", "url": endpoint.url("ok"), "model": "claude-test", "apiKeyEnv": "ANTHROPIC_TEST_KEY"});
    let (value, stderr) = run_with(
        dir.path(),
        provider,
        THINK,
        &[("ANTHROPIC_TEST_KEY", "sk-ant-secret-1234")],
    );
    assert_eq!(
        value,
        json!({"text": "Hi from Anthropic.", "model": "claude-test", "stopReason": "endTurn"})
    );
    let received = endpoint.take();
    assert_eq!(received.len(), 1, "{received:?}");
    let request = &received[0];
    assert_eq!(request.path, "/ok/v1/messages");
    assert_eq!(request.headers["x-api-key"], "sk-ant-secret-1234");
    assert_eq!(request.headers["anthropic-version"], "2023-06-01");
    assert!(!request.headers.contains_key("authorization"));
    assert_eq!(
        request.body,
        json!({
            "model": "claude-test",
            "max_tokens": 64,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": "Hello?"}],
        })
    );
    assert!(!stderr.contains("sk-ant-secret-1234"), "{stderr}");
}

/// An OpenAI-compatible endpoint gets a bearer token and the system prompt as the first message.
#[test]
fn an_openai_compatible_endpoint_answers_when_the_client_cannot_sample() {
    let endpoint = Endpoint::start();
    let dir = tempfile::tempdir().unwrap();
    let provider = json!({"kind": "openai", "url": format!("{}/", endpoint.url("ok")), "model": "gpt-test", "apiKeyEnv": "OPENAI_TEST_KEY"});
    let (value, stderr) = run_with(
        dir.path(),
        provider,
        THINK,
        &[("OPENAI_TEST_KEY", "sk-openai-secret-5678")],
    );
    assert_eq!(
        value,
        json!({"text": "Hi from OpenAI.", "model": "gpt-test", "stopReason": "maxTokens"})
    );
    let received = endpoint.take();
    assert_eq!(received.len(), 1, "{received:?}");
    let request = &received[0];
    assert_eq!(request.path, "/ok/chat/completions");
    assert_eq!(
        request.headers["authorization"],
        "Bearer sk-openai-secret-5678"
    );
    assert_eq!(
        request.body,
        json!({
            "model": "gpt-test",
            "max_tokens": 64,
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hello?"},
            ],
        })
    );
    assert!(!stderr.contains("sk-openai-secret-5678"), "{stderr}");
}

/// An endpoint that fails, answers what is not JSON, or whose key is not set: code reads what
/// went wrong and what to change.
#[test]
fn a_failing_endpoint_is_explained() {
    let endpoint = Endpoint::start();
    let dir = tempfile::tempdir().unwrap();
    let key = [("ANTHROPIC_TEST_KEY", "sk-ant-secret-1234")];
    let anthropic = |scenario: &str| json!({"kind": "anthropic", "url": endpoint.url(scenario), "model": "claude-test", "apiKeyEnv": "ANTHROPIC_TEST_KEY"});

    let (message, _) = run_with(dir.path(), anthropic("fail"), CAUGHT, &key);
    assert_eq!(
        message,
        format!(
            "llm.ask: the LLM at {} (anthropic) failed: it answered HTTP 500 Internal Server Error: Overloaded",
            endpoint.url("fail")
        )
    );

    let (message, _) = run_with(dir.path(), anthropic("garbled"), CAUGHT, &key);
    assert_eq!(
        message,
        format!(
            "llm.ask: the LLM at {} (anthropic) failed: its answer is not JSON (expected value at line 1 column 1): <html>not json</html>",
            endpoint.url("garbled")
        )
    );

    let (message, _) = run_with(dir.path(), anthropic("ok"), CAUGHT, &[]);
    assert_eq!(
        message,
        "llm.ask: the LLM's key is missing: the environment variable ANTHROPIC_TEST_KEY (\"apiKeyEnv\" of \"llm\" in the settings file) is not set in toolweave's environment"
    );
    assert_eq!(
        endpoint.take().len(),
        2,
        "no request goes out without a key"
    );
}

/// With allowed system prompts (the settings' and --llm-system-prompts' together), only those
/// are sent, word for word; another one, or none, is refused before anything goes out.
#[test]
fn only_allowed_system_prompts_are_sent() {
    let endpoint = Endpoint::start();
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("prompts.json");
    std::fs::write(&prompts, r#"["Answer in French."]"#).unwrap();
    let settings = json!({
        "llm": {"kind": "anthropic", "url": endpoint.url("ok"), "model": "claude-test", "apiKeyEnv": "ANTHROPIC_TEST_KEY"},
        "llmSystemPrompts": ["Be brief."],
    });
    let code = r#"
const answers = [];
for (const system of ["Be brief.", "Answer in French.", "Be brief. ", undefined]) {
  try {
    answers.push(await llm.ask("Hello?", system === undefined ? {} : { system }));
  } catch (error) {
    answers.push(error.message);
  }
}
return answers;
"#;
    let (value, _) = run_with_settings(
        dir.path(),
        settings,
        &["--llm-system-prompts", prompts.to_str().unwrap()],
        code,
        &[("ANTHROPIC_TEST_KEY", "sk-ant-secret-1234")],
    );
    let rule = "this gateway allows only 2 exact system prompt(s) (--llm-system-prompts, or \"llmSystemPrompts\" in the settings file); send one of them as system, word for word.";
    assert_eq!(
        value,
        json!([
            "Hi from Anthropic.",
            "Hi from Anthropic.",
            format!("llm.ask: this system prompt is not allowed: {rule}"),
            format!("llm.ask: a system prompt is required: {rule}"),
        ])
    );
    let systems: Vec<Value> = endpoint
        .take()
        .into_iter()
        .map(|received| received.body["system"].clone())
        .collect();
    assert_eq!(systems, [json!("Be brief."), json!("Answer in French.")]);
}
