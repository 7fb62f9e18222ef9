//! The fixture's fault mode (`--faults`): an MCP server written by hand that sends what faulty
//! servers send, byte for byte, so tests can check how a client copes.
//!
//! It answers `initialize`, `ping` and `tools/list` as a server should (unless `--fault-initialize`
//! or `--fault-tools` say otherwise), and each of its tools answers `tools/call` with one kind of
//! fault ([`Fault`]): the tool named `truncated` answers with JSON cut in the middle, `string_id`
//! with an answer whose id is the string form of the request's number before the right answer,
//! and so on. The tool `ok` answers properly, to show that the connection still serves.
//!
//! It serves on stdio (one message per line), with `--http ADDR` over streamable HTTP at `/mcp`
//! (each request's answers as an event stream, or with `--fault-framing json` as a JSON body;
//! answers to notifications are `202`), and with `--sse ADDR` over the legacy HTTP+SSE transport.
//! Messages are written as raw bytes on every transport, so invalid UTF-8 reaches the client as
//! sent.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, bail};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use futures::channel::mpsc;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use crate::listen::{LISTENING, Listen};

/// One way to answer a request wrongly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The answer, cut in the middle: not valid JSON.
    Truncated,
    /// The answer with bytes that are not UTF-8 in a string.
    InvalidUtf8,
    /// An answer whose message nests this many levels (objects and arrays).
    Deep(usize),
    /// A JSON-RPC error with a code and no message.
    ErrorWithoutMessage,
    /// The answer marked `"jsonrpc": "1.0"`.
    JsonRpc1,
    /// First a wrong answer whose id is the request's number as a string, then the right one.
    StringId,
    /// First an answer to a request that was never made, then the right one.
    UnknownId,
    /// First a message that is not JSON and carries no id, then the right answer.
    UntiedThenOk,
    /// An answer whose result has the wrong shape (`content` is not an array).
    BadResult,
    /// No answer at all.
    Silent,
}

impl Fault {
    /// The fault a name stands for: a tool's name, or the value of `--fault-initialize`.
    pub fn named(name: &str) -> Option<Self> {
        Some(match name {
            "truncated" => Self::Truncated,
            "invalid_utf8" => Self::InvalidUtf8,
            "deep_result" => Self::Deep(DEFAULT_DEPTH),
            "error_without_message" => Self::ErrorWithoutMessage,
            "jsonrpc_1" => Self::JsonRpc1,
            "string_id" => Self::StringId,
            "unknown_id" => Self::UnknownId,
            "untied_then_ok" => Self::UntiedThenOk,
            "bad_result" => Self::BadResult,
            "silent" => Self::Silent,
            _ => return None,
        })
    }

    /// What to send, each a message without its newline, in place of `{"jsonrpc": "2.0", "id":
    /// id, "result": result}`.
    pub fn messages(self, id: &Value, result: &Value) -> Vec<Vec<u8>> {
        let right = json!({ "jsonrpc": "2.0", "id": id, "result": result })
            .to_string()
            .into_bytes();
        match self {
            Self::Truncated => vec![right[..right.len() / 2].to_vec()],
            Self::InvalidUtf8 => {
                let text = json!({ "jsonrpc": "2.0", "id": id, "result": {
                    "content": [{ "type": "text", "text": "INVALID" }]
                } })
                .to_string();
                let (before, after) = text.split_once("INVALID").unwrap_or((&text, ""));
                vec![[before.as_bytes(), b"\xff\xfe", after.as_bytes()].concat()]
            }
            Self::Deep(depth) => vec![deep_message(id, depth).into_bytes()],
            Self::ErrorWithoutMessage => vec![
                json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32000 } })
                    .to_string()
                    .into_bytes(),
            ],
            Self::JsonRpc1 => vec![
                json!({ "jsonrpc": "1.0", "id": id, "result": result })
                    .to_string()
                    .into_bytes(),
            ],
            Self::StringId => {
                let other = match id {
                    Value::Number(number) => Value::String(number.to_string()),
                    Value::String(text) => text
                        .parse::<i64>()
                        .map_or_else(|_| Value::String(format!("{text}-other")), Value::from),
                    other => other.clone(),
                };
                let wrong = json!({ "jsonrpc": "2.0", "id": other, "result": text_result(
                    "wrong: an answer with the request's id in another JSON type"
                ) });
                vec![wrong.to_string().into_bytes(), right]
            }
            Self::UnknownId => {
                let other = id.as_i64().map_or_else(
                    || Value::String("never-sent".to_owned()),
                    |number| Value::from(number + 1000),
                );
                let wrong = json!({ "jsonrpc": "2.0", "id": other, "result": text_result(
                    "wrong: an answer to a request that was never made"
                ) });
                vec![wrong.to_string().into_bytes(), right]
            }
            Self::UntiedThenOk => vec![
                b"{\"jsonrpc\":\"2.0\",\"result\":{\"content\":[".to_vec(),
                right,
            ],
            Self::BadResult => vec![
                json!({ "jsonrpc": "2.0", "id": id, "result": { "content": "not an array" } })
                    .to_string()
                    .into_bytes(),
            ],
            Self::Silent => Vec::new(),
        }
    }
}

/// The nesting of `deep_result` when the call does not say.
pub const DEFAULT_DEPTH: usize = 130;

/// The largest nesting `deep_result` and `--fault-tools deep:N` make, so a typo cannot exhaust
/// memory.
const MAX_DEPTH: usize = 1_000_000;

/// An answer to request `id` whose message nests `depth` levels: the structured content is
/// arrays in arrays.
fn deep_message(id: &Value, depth: usize) -> String {
    // The message, its result and the structured content object are three levels.
    let arrays = depth.saturating_sub(3).min(MAX_DEPTH);
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[],\"structuredContent\":{{\"deep\":{}{}}}}}}}",
        "[".repeat(arrays),
        "]".repeat(arrays)
    )
}

fn text_result(text: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": text }] })
}

/// What `--fault-tools` adds to the tool list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadTools {
    /// `malformed`: definitions that are not valid tools (no input schema, a schema that is a
    /// string, no name, a number for a name), between valid ones.
    Malformed,
    /// `deep:N`: a tool `deep_schema_N` whose input schema nests N objects in `properties`.
    DeepSchema(usize),
}

/// How `--http` frames the answers to a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Framing {
    /// An event stream with one event per message (the default).
    #[default]
    Events,
    /// A JSON body: the first message only.
    Json,
}

/// The options of the fault mode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultOptions {
    /// `--fault-initialize KIND`: answer `initialize` with this fault (a tool's name, or `untied`
    /// for an answer that is not JSON and carries no id, and nothing after it).
    pub initialize: Option<InitializeFault>,
    /// `--fault-tools malformed,deep:N`: what to add to the tool list.
    pub tools: Vec<BadTools>,
    /// `--fault-framing events|json`: how answers go over `--http`.
    pub framing: Framing,
}

/// How `initialize` is answered wrongly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitializeFault {
    /// With this fault.
    Fault(Fault),
    /// With a line that is not JSON and has no id, and nothing else.
    Untied,
}

impl FaultOptions {
    /// Parses the value of `--fault-initialize`.
    pub fn parse_initialize(text: &str) -> Result<InitializeFault, String> {
        if text == "untied" {
            return Ok(InitializeFault::Untied);
        }
        Fault::named(text)
            .map(InitializeFault::Fault)
            .ok_or_else(|| {
                format!("--fault-initialize takes a fault tool's name or untied, got {text:?}")
            })
    }

    /// Parses the value of `--fault-tools`.
    pub fn parse_tools(text: &str) -> Result<Vec<BadTools>, String> {
        text.split(',')
            .map(|part| match part.trim() {
                "malformed" => Ok(BadTools::Malformed),
                other => other
                    .strip_prefix("deep:")
                    .and_then(|levels| levels.parse::<usize>().ok())
                    .filter(|levels| (1..=MAX_DEPTH).contains(levels))
                    .map(BadTools::DeepSchema)
                    .ok_or_else(|| {
                        format!("--fault-tools takes malformed and deep:N, got {other:?}")
                    }),
            })
            .collect()
    }

    /// Parses the value of `--fault-framing`.
    pub fn parse_framing(text: &str) -> Result<Framing, String> {
        match text {
            "events" => Ok(Framing::Events),
            "json" => Ok(Framing::Json),
            other => Err(format!(
                "--fault-framing takes events or json, got {other:?}"
            )),
        }
    }
}

/// The tools of the fault mode: `ok`, then one per [`Fault`].
pub const FAULT_TOOLS: [&str; 12] = [
    "ok",
    "truncated",
    "invalid_utf8",
    "deep_result",
    "error_without_message",
    "jsonrpc_1",
    "string_id",
    "unknown_id",
    "untied_then_ok",
    "bad_result",
    "silent",
    "deaf",
];

/// The hand-written server: what to send for each message the client sends.
#[derive(Debug, Clone)]
pub struct FaultServer {
    options: FaultOptions,
}

/// What to do after answering one message.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// The messages to send, each without its newline.
    pub messages: Vec<Vec<u8>>,
    /// Stop reading the client's messages (the `deaf` tool, on stdio).
    pub stop_reading: bool,
}

impl FaultServer {
    /// A server with these options.
    pub fn new(options: FaultOptions) -> Self {
        Self { options }
    }

    /// What to send in answer to `message` (nothing for notifications and answers).
    pub fn answer(&self, message: &Value) -> Answer {
        let (Some(id), Some(method)) = (
            message.get("id"),
            message.get("method").and_then(Value::as_str),
        ) else {
            return Answer::default();
        };
        let messages = match method {
            "initialize" => self.initialize(id, message),
            "tools/list" => vec![
                format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"tools\":[{}]}}}}",
                    self.tools().join(",")
                )
                .into_bytes(),
            ],
            "tools/call" => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                let name = params.get("name").and_then(Value::as_str).unwrap_or("");
                if name == "deaf" {
                    return Answer {
                        messages: vec![respond(id, &text_result("ok; not reading any more"))],
                        stop_reading: true,
                    };
                }
                call(id, name, params.get("arguments"))
            }
            "ping" => vec![respond(id, &json!({}))],
            other => vec![
                json!({ "jsonrpc": "2.0", "id": id, "error": {
                    "code": -32601, "message": format!("method {other:?} not found")
                } })
                .to_string()
                .into_bytes(),
            ],
        };
        Answer {
            messages,
            stop_reading: false,
        }
    }

    fn initialize(&self, id: &Value, message: &Value) -> Vec<Vec<u8>> {
        let version = message
            .pointer("/params/protocolVersion")
            .cloned()
            .unwrap_or_else(|| json!("2025-06-18"));
        let result = json!({
            "protocolVersion": version,
            "capabilities": { "tools": {} },
            "serverInfo": { "name": "toolweave-fixture-faults", "version": env!("CARGO_PKG_VERSION") }
        });
        match self.options.initialize {
            None => vec![respond(id, &result)],
            Some(InitializeFault::Fault(fault)) => fault.messages(id, &result),
            Some(InitializeFault::Untied) => vec![b"{\"jsonrpc\":\"2.0\",\"result\":{".to_vec()],
        }
    }

    /// The tool definitions, as JSON text (a deep one would not survive a `Value`).
    fn tools(&self) -> Vec<String> {
        let empty = json!({ "type": "object", "properties": {} });
        let mut tools: Vec<Value> = FAULT_TOOLS
            .iter()
            .map(|name| {
                let mut schema = empty.clone();
                if *name == "deep_result" {
                    schema = json!({ "type": "object", "properties": {
                        "depth": { "type": "integer", "minimum": 0 }
                    } });
                }
                json!({ "name": name, "description": format!("Answers with the fault {name}."), "inputSchema": schema })
            })
            .collect();
        let mut deep = Vec::new();
        for bad in &self.options.tools {
            match bad {
                BadTools::Malformed => tools.extend([
                    json!({ "name": "no_schema", "description": "A tool without an inputSchema." }),
                    json!({ "name": "schema_is_text", "inputSchema": "object" }),
                    json!({ "description": "A tool without a name.", "inputSchema": empty }),
                    json!({ "name": 42, "inputSchema": empty }),
                    json!({ "name": "after_the_bad_ones", "description": "A valid tool.", "inputSchema": empty }),
                ]),
                BadTools::DeepSchema(levels) => deep.push(format!(
                    "{{\"name\":\"deep_schema_{levels}\",\"inputSchema\":{}}}",
                    deep_schema(*levels)
                )),
            }
        }
        tools.iter().map(Value::to_string).chain(deep).collect()
    }
}

/// An object schema whose property `inner` is an object schema, `levels` times, as JSON text.
fn deep_schema(levels: usize) -> String {
    let wraps = levels.clamp(1, MAX_DEPTH) - 1;
    format!(
        "{}{{\"type\":\"object\",\"properties\":{{}}}}{}",
        "{\"type\":\"object\",\"properties\":{\"inner\":".repeat(wraps),
        "}}".repeat(wraps)
    )
}

fn respond(id: &Value, result: &Value) -> Vec<u8> {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
        .to_string()
        .into_bytes()
}

/// The answer of tool `name`: its fault, or its name as text.
fn call(id: &Value, name: &str, arguments: Option<&Value>) -> Vec<Vec<u8>> {
    let right = match name {
        "string_id" | "unknown_id" => text_result("right"),
        _ => text_result(name),
    };
    match Fault::named(name) {
        Some(Fault::Deep(default)) => {
            let depth = arguments
                .and_then(|arguments| arguments.get("depth"))
                .and_then(Value::as_u64)
                .and_then(|depth| usize::try_from(depth).ok())
                .unwrap_or(default);
            Fault::Deep(depth).messages(id, &right)
        }
        Some(fault) => fault.messages(id, &right),
        // Any other tool (the ones `--fault-tools` adds) answers with its name.
        None => vec![respond(id, &right)],
    }
}

/// Serves the fault mode as `faults` say, over HTTP as `http` says or else on stdio, until the
/// client goes.
pub async fn serve_faults(faults: FaultOptions, http: Option<&Listen>) -> anyhow::Result<()> {
    let server = FaultServer::new(faults.clone());
    match http {
        None => serve_stdio(server).await,
        Some(Listen::Http(address)) => {
            let app = Router::new().route(
                "/mcp",
                post(move |body: Bytes| streamable(server.clone(), faults.framing, body))
                    .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
                    .delete(|| async { StatusCode::OK }),
            );
            listen(address, app, "/mcp").await
        }
        Some(Listen::Sse(address)) => listen(address, legacy_app(server), "/sse").await,
    }
}

async fn listen(address: &str, app: Router, path: &str) -> anyhow::Result<()> {
    let listener = TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let bound = listener.local_addr()?;
    eprintln!("{LISTENING}http://{bound}{path}");
    axum::serve(listener, app).await?;
    Ok(())
}

async fn serve_stdio(server: FaultServer) -> anyhow::Result<()> {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    while let Some(line) = lines.next_line().await? {
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            bail!("the client sent a line that is not JSON: {line:?}");
        };
        let answer = server.answer(&message);
        for bytes in &answer.messages {
            stdout.write_all(bytes).await?;
            stdout.write_all(b"\n").await?;
        }
        stdout.flush().await?;
        if answer.stop_reading {
            eprintln!("toolweave-fixture: not reading stdin any more (deaf)");
            return std::future::pending().await;
        }
    }
    Ok(())
}

/// The session id the streamable HTTP fault server gives every client.
const SESSION_ID: &str = "faults-1";

async fn streamable(server: FaultServer, framing: Framing, body: Bytes) -> Response {
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    if message.get("id").is_none() || message.get("method").is_none() {
        return StatusCode::ACCEPTED.into_response();
    }
    let answer = server.answer(&message);
    let session = [("mcp-session-id", SESSION_ID)];
    match framing {
        Framing::Json => match answer.messages.into_iter().next() {
            Some(first) => {
                (session, [(header::CONTENT_TYPE, "application/json")], first).into_response()
            }
            None => std::future::pending().await,
        },
        Framing::Events => {
            let silent = answer.messages.is_empty();
            let events = futures::stream::iter(answer.messages)
                .map(|message| Ok::<_, Infallible>(Bytes::from(event(None, &message))));
            // A silent answer keeps its stream open, as a server still working would.
            let body = if silent {
                Body::from_stream(events.chain(futures::stream::pending()))
            } else {
                Body::from_stream(events)
            };
            (session, [(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
        }
    }
}

/// One event carrying `data` as it is (raw bytes, one line).
fn event(name: Option<&str>, data: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(data.len() + 32);
    if let Some(name) = name {
        bytes.extend_from_slice(format!("event: {name}\n").as_bytes());
    }
    bytes.extend_from_slice(b"data: ");
    bytes.extend_from_slice(data);
    bytes.extend_from_slice(b"\n\n");
    bytes
}

/// The legacy transport's sessions: where each one's answers go.
#[derive(Clone, Default)]
struct Sessions {
    next: Arc<AtomicU64>,
    senders: Arc<Mutex<HashMap<u64, mpsc::UnboundedSender<Vec<u8>>>>>,
}

fn legacy_app(server: FaultServer) -> Router {
    let sessions = Sessions::default();
    let opened = sessions.clone();
    Router::new()
        .route("/sse", get(move || open_legacy(opened.clone())))
        .route(
            "/message",
            post(move |uri: Uri, body: Bytes| {
                post_legacy(server.clone(), sessions.clone(), uri, body)
            }),
        )
}

async fn open_legacy(sessions: Sessions) -> Response {
    let id = sessions.next.fetch_add(1, Ordering::SeqCst);
    let (sender, messages) = mpsc::unbounded::<Vec<u8>>();
    sessions
        .senders
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id, sender);
    let endpoint = event(
        Some("endpoint"),
        format!("/message?sessionId={id}").as_bytes(),
    );
    let events = futures::stream::once(async move { endpoint })
        .chain(messages.map(|message| event(Some("message"), &message)))
        .map(|bytes| Ok::<_, Infallible>(Bytes::from(bytes)));
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(events),
    )
        .into_response()
}

async fn post_legacy(server: FaultServer, sessions: Sessions, uri: Uri, body: Bytes) -> Response {
    let sender = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .find_map(|pair| pair.strip_prefix("sessionId="))
        .and_then(|id| id.parse::<u64>().ok())
        .and_then(|id| {
            sessions
                .senders
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&id)
                .cloned()
        });
    let Some(sender) = sender else {
        return (StatusCode::NOT_FOUND, "unknown session").into_response();
    };
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    for bytes in server.answer(&message).messages {
        if sender.unbounded_send(bytes).is_err() {
            return (StatusCode::NOT_FOUND, "the session ended").into_response();
        }
    }
    StatusCode::ACCEPTED.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_of(bytes: &[u8]) -> usize {
        let (mut depth, mut deepest) = (0usize, 0usize);
        for byte in bytes {
            match byte {
                b'[' | b'{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b']' | b'}' => depth -= 1,
                _ => {}
            }
        }
        deepest
    }

    #[test]
    fn each_fault_sends_what_it_says() {
        let id = json!(7);
        let result = text_result("right");
        let one = |fault: Fault| {
            let mut messages = fault.messages(&id, &result);
            assert_eq!(messages.len(), 1, "{fault:?}");
            messages.remove(0)
        };
        assert!(serde_json::from_slice::<Value>(&one(Fault::Truncated)).is_err());
        let invalid = one(Fault::InvalidUtf8);
        assert!(std::str::from_utf8(&invalid).is_err());
        assert!(invalid.starts_with(b"{\"jsonrpc\":\"2.0\",\"id\":7,"));
        assert_eq!(depth_of(&one(Fault::Deep(130))), 130);
        let deep: Value = serde_json::from_slice(&one(Fault::Deep(10))).unwrap();
        assert_eq!(deep["id"], 7);
        let no_message: Value = serde_json::from_slice(&one(Fault::ErrorWithoutMessage)).unwrap();
        assert_eq!(no_message["error"], json!({ "code": -32000 }));
        let old: Value = serde_json::from_slice(&one(Fault::JsonRpc1)).unwrap();
        assert_eq!(old["jsonrpc"], "1.0");
        let bad: Value = serde_json::from_slice(&one(Fault::BadResult)).unwrap();
        assert_eq!(bad["result"]["content"], "not an array");
        assert!(Fault::Silent.messages(&id, &result).is_empty());

        let two = Fault::StringId.messages(&id, &result);
        let wrong: Value = serde_json::from_slice(&two[0]).unwrap();
        let right: Value = serde_json::from_slice(&two[1]).unwrap();
        assert_eq!(wrong["id"], json!("7"));
        assert_eq!(right["id"], json!(7));
        assert_eq!(right["result"], result);
        let two = Fault::UnknownId.messages(&id, &result);
        assert_eq!(
            serde_json::from_slice::<Value>(&two[0]).unwrap()["id"],
            1007
        );
        let two = Fault::UntiedThenOk.messages(&id, &result);
        assert!(serde_json::from_slice::<Value>(&two[0]).is_err());
        assert_eq!(serde_json::from_slice::<Value>(&two[1]).unwrap()["id"], 7);
    }

    #[test]
    fn tools_list_carries_the_bad_definitions_asked_for() {
        let server = FaultServer::new(FaultOptions {
            tools: FaultOptions::parse_tools("malformed,deep:70").unwrap(),
            ..FaultOptions::default()
        });
        let answer = server.answer(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }));
        // The message, its result, the tools array, the tool, then 70 schemas, each an object
        // holding `properties`, an object.
        assert_eq!(depth_of(&answer.messages[0]), 4 + 2 * 70);
        let shallow = FaultServer::new(FaultOptions {
            tools: FaultOptions::parse_tools("malformed,deep:3").unwrap(),
            ..FaultOptions::default()
        });
        let answer = shallow.answer(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }));
        let message: Value = serde_json::from_slice(&answer.messages[0]).unwrap();
        let tools = message["result"]["tools"].as_array().unwrap();
        assert_eq!(tools.len(), FAULT_TOOLS.len() + 6);
        let deep = tools.last().unwrap();
        assert_eq!(deep["name"], "deep_schema_3");
        assert_eq!(
            deep["inputSchema"]["properties"]["inner"]["properties"]["inner"],
            json!({ "type": "object", "properties": {} })
        );
        assert!(FaultOptions::parse_tools("deep:x").is_err());
        assert!(FaultOptions::parse_initialize("nonsense").is_err());
        assert_eq!(
            FaultOptions::parse_initialize("untied").unwrap(),
            InitializeFault::Untied
        );
    }

    #[test]
    fn calls_answer_by_tool_name() {
        let server = FaultServer::new(FaultOptions::default());
        let call = |name: &str, arguments: Value| {
            server.answer(&json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": { "name": name, "arguments": arguments } }))
        };
        let ok: Value = serde_json::from_slice(&call("ok", json!({})).messages[0]).unwrap();
        assert_eq!(ok["result"], text_result("ok"));
        assert_eq!(
            depth_of(&call("deep_result", json!({ "depth": 40 })).messages[0]),
            40
        );
        assert!(call("deaf", json!({})).stop_reading);
        // Notifications are not answered.
        assert_eq!(
            server.answer(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })),
            Answer::default()
        );
    }
}
