//! The rest of MCP 2026-07-28 on the face toolweave serves: tool list changes on
//! `subscriptions/listen`, `tools/list`'s `ttlMs`, `cacheScope` and order, per-request `logLevel`,
//! W3C trace context passed on to upstream servers (`tests/python/sdk_face.py`, the official Python
//! SDK in both its modes), and, with a raw HTTP client where the SDK sends only what is right, the
//! `Mcp-Method` / `Mcp-Name` headers checked against the body, `cacheScope` private with
//! identities set, and a log level MCP does not have.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolweave_testkit::harness::fixture_config;
use toolweave_testkit::http::HttpToolweave;

use super::{run_sdk_script, toolweave};

/// The fixture's config, its server started with `--record-meta` (the file it records into).
pub(super) fn recording_config() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let recorded = dir.path().join("meta.jsonl");
    let mut servers: Value = serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
    let args = servers["mcpServers"]["fixture"]["args"]
        .as_array_mut()
        .unwrap();
    args.push(json!("--record-meta"));
    args.push(json!(recorded));
    std::fs::write(&config, servers.to_string()).unwrap();
    (dir, config, recorded)
}

fn run_in(mode: &str) {
    let (_dir, config, recorded) = recording_config();
    run_sdk_script(
        "sdk_face",
        &[config.as_os_str(), recorded.as_os_str(), mode.as_ref()],
    );
}

/// MCP 2026-07-28: list changes on `subscriptions/listen`, `ttlMs` and `cacheScope`, the request's
/// own log level (and no log messages for a request without one), trace context passed on.
#[test]
fn the_rest_of_2026_07_28_through_the_python_sdk() {
    run_in("default");
}

/// MCP 2025-11-25: list changes on the session, the session's log level, trace context passed on.
#[test]
fn the_same_flows_through_the_python_sdk_in_legacy_mode() {
    run_in("legacy");
}

/// A raw 2026-07-28 POST with `headers` (besides the content type, accept and protocol version);
/// its status and body as JSON (an event stream's one message).
async fn post(
    url: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    message: &Value,
) -> (u16, Value) {
    let mut request = toolweave_testkit::http::client()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .body(message.to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .find(|data| !data.is_empty())
        .unwrap_or(&text);
    let body = serde_json::from_str(body).unwrap_or_else(|_| json!({ "text": text }));
    (status, body)
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn execute(code: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "execute_code", "arguments": { "code": code }, "_meta": meta() }})
}

/// Each header is checked against the body: a missing, different or undecodable one gets `400`
/// and `-32020` (`HeaderMismatch`) naming the header, and the request is not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_method_and_mcp_name_headers_must_match_the_body() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = HttpToolweave::start(toolweave(), &config, &[], &[])
        .await
        .unwrap();
    let url = server.url();
    let call = execute("return 6 * 7");
    let (status, body) = post(
        &url,
        None,
        &[("mcp-method", "tools/call"), ("mcp-name", "execute_code")],
        &call,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["structuredContent"]["result"], json!(42));
    // The Base64 form of the name is taken too.
    let (status, body) = post(
        &url,
        None,
        &[
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?ZXhlY3V0ZV9jb2Rl?="),
        ],
        &call,
    )
    .await;
    assert_eq!(status, 200, "{body}");

    let refused = [
        (
            vec![("mcp-method", "tools/list"), ("mcp-name", "execute_code")],
            "Mcp-Method header `tools/list` does not match body method `tools/call`",
        ),
        (
            vec![("mcp-method", "tools/call"), ("mcp-name", "search_tools")],
            "Mcp-Name header `search_tools` does not match body value `execute_code`",
        ),
        (
            vec![("mcp-name", "execute_code")],
            "missing required Mcp-Method header",
        ),
        (
            vec![("mcp-method", "tools/call")],
            "missing required Mcp-Name header for `tools/call`",
        ),
        (
            vec![("mcp-method", "tools/call"), ("mcp-name", "=?base64?!!!?=")],
            "Mcp-Name header is not valid Base64",
        ),
    ];
    for (headers, why) in refused {
        let (status, body) = post(&url, None, &headers, &call).await;
        assert_eq!(status, 400, "{headers:?}: {body}");
        assert_eq!(body["error"]["code"], json!(-32020), "{headers:?}: {body}");
        assert_eq!(body["id"], json!(7), "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(why), "{headers:?}: {message}");
    }
    // A method without a name: only Mcp-Method, and it must match.
    let list =
        json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": { "_meta": meta() }});
    let (status, body) = post(&url, None, &[("mcp-method", "tools/list")], &list).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = post(&url, None, &[("mcp-method", "tools/call")], &list).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], json!(-32020), "{body}");
}

/// With identities set, `tools/list` is cached per token (`cacheScope` private); the tools come
/// in the same order to every identity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_identities_the_tool_list_is_private() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let settings = identities_settings(dir.path());
    let server = HttpToolweave::start(
        toolweave(),
        &config,
        &["--settings", settings.to_str().unwrap()],
        &[("TW_FIRST_TOKEN", FIRST), ("TW_SECOND_TOKEN", SECOND)],
    )
    .await
    .unwrap();
    let list =
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": { "_meta": meta() }});
    let mut lists = Vec::new();
    for token in [FIRST, SECOND] {
        let (status, body) = post(
            &server.url(),
            Some(token),
            &[("mcp-method", "tools/list")],
            &list,
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["cacheScope"], json!("private"), "{body}");
        // The three tools do not follow the catalog: they change only with the settings.
        assert_eq!(body["result"]["ttlMs"], json!(3_600_000), "{body}");
        lists.push(body["result"]["tools"].clone());
    }
    assert_eq!(lists[0], lists[1]);

    // Without identities the same list is public.
    let open = HttpToolweave::start(toolweave(), &config, &[], &[])
        .await
        .unwrap();
    let (status, body) = post(&open.url(), None, &[("mcp-method", "tools/list")], &list).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["cacheScope"], json!("public"), "{body}");
}

const FIRST: &str = "tw-first-token-0c4d2e";
const SECOND: &str = "tw-second-token-9a7f13";

fn identities_settings(dir: &Path) -> PathBuf {
    let path = dir.join("settings.json");
    let settings = json!({
        "identities": {
            "first": { "tokenEnv": "TW_FIRST_TOKEN" },
            "second": { "tokenEnv": "TW_SECOND_TOKEN", "deny": ["fixture.remove"] }
        }
    });
    std::fs::write(&path, settings.to_string()).unwrap();
    path
}

/// A log level MCP does not have is refused (`-32602`), naming the levels it has; nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_level_mcp_does_not_have_is_refused() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = HttpToolweave::start(toolweave(), &config, &[], &[])
        .await
        .unwrap();
    let mut call = execute("return 1");
    call["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("loud");
    let (_, body) = post(
        &server.url(),
        None,
        &[("mcp-method", "tools/call"), ("mcp-name", "execute_code")],
        &call,
    )
    .await;
    assert_eq!(body["error"]["code"], json!(-32602), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"loud\"") && message.contains("warning"),
        "{message}"
    );
}
