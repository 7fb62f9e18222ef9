//! Servers that send what does not parse, on every transport: stdio, streamable HTTP (answers as
//! event streams, and as JSON bodies) and the legacy HTTP+SSE transport, all served by the
//! fixture's fault mode (`toolweave-fixture --faults`).
//!
//! Every unreadable answer fails the call it answers at once, with the cause and the server, and
//! the server keeps serving; bad tool definitions are left out one by one; answers match their
//! requests by the JSON type and value of their ids; a start that fails names what could not be
//! read; and a call that times out says where its time went.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use toolweave_testkit::faults::FAULT_TOOLS;
use toolweave_testkit::fixture_binary;
use toolweave_testkit::fixture_http::RemoteFixture;
use toolweave_upstream::{CallOptions, Delivery, Error, Malformed, Options, UpstreamManager};

/// How a fault server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A child process on stdio.
    Stdio,
    /// Streamable HTTP, each answer an event stream.
    Events,
    /// Streamable HTTP, each answer a JSON body.
    Json,
    /// The legacy HTTP+SSE transport.
    Sse,
}

const KINDS: [Kind; 4] = [Kind::Stdio, Kind::Events, Kind::Json, Kind::Sse];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Stdio => "stdio",
            Kind::Events => "events",
            Kind::Json => "json",
            Kind::Sse => "sse",
        }
    }
}

/// A fault server and its config entry; an HTTP one lives as long as this.
struct Faulty {
    entry: Value,
    _remote: Option<RemoteFixture>,
}

async fn faulty(kind: Kind, extra: &[&str]) -> Faulty {
    let mut args = vec!["--faults"];
    args.extend_from_slice(extra);
    let listen = match kind {
        Kind::Stdio => {
            return Faulty {
                entry: json!({ "command": fixture_binary(), "args": args }),
                _remote: None,
            };
        }
        Kind::Events | Kind::Json => "--http",
        Kind::Sse => "--sse",
    };
    args.extend([listen, "127.0.0.1:0"]);
    if kind == Kind::Json {
        args.extend(["--fault-framing", "json"]);
    }
    let remote = RemoteFixture::start(&args)
        .await
        .unwrap_or_else(|error| panic!("{error:#}"));
    let transport = if kind == Kind::Sse { "sse" } else { "http" };
    Faulty {
        entry: json!({ "type": transport, "url": remote.url }),
        _remote: Some(remote),
    }
}

fn manager(servers: &[(&str, &Faulty)], options: Options) -> Arc<UpstreamManager> {
    super::logs();
    let servers: Map<String, Value> = servers
        .iter()
        .map(|(name, server)| ((*name).to_owned(), server.entry.clone()))
        .collect();
    let text = json!({ "mcpServers": servers }).to_string();
    let config = toolweave_config::parse_str_with_env(
        &text,
        std::path::Path::new("/test/mcp.json"),
        &|_| None,
    )
    .unwrap_or_else(|error| panic!("{error}"));
    UpstreamManager::start(&config, options)
}

/// Generous timeouts: a fault must be reported when it arrives, long before either.
fn options() -> Options {
    Options {
        startup_timeout: Duration::from_secs(20),
        call_timeout: Duration::from_secs(20),
    }
}

/// How long an answer that comes at once may take on a loaded machine.
const AT_ONCE: Duration = Duration::from_secs(5);

async fn call(upstream: &UpstreamManager, server: &str, tool: &str) -> Result<String, Error> {
    let result = upstream
        .call_tool(
            server,
            tool,
            Some(Map::new()),
            None,
            CancellationToken::new(),
        )
        .await?;
    Ok(result
        .content
        .first()
        .and_then(|item| item.as_text())
        .map(|text| text.text.clone())
        .unwrap_or_default())
}

/// The fault a call failed with, checking that the error names the server and the tool.
async fn fault_of(upstream: &UpstreamManager, server: &str, tool: &str) -> Malformed {
    let started = Instant::now();
    let answer = call(upstream, server, tool).await;
    assert!(
        started.elapsed() < AT_ONCE,
        "{server} {tool}: the error should come with the answer, it took {:?}",
        started.elapsed()
    );
    match answer {
        Err(Error::UnreadableAnswer {
            server: named,
            tool: called,
            malformed,
        }) => {
            assert_eq!((named.as_str(), called.as_str()), (server, tool));
            malformed
        }
        other => panic!("{server} {tool}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_unreadable_answer_fails_its_call_at_once_and_the_server_keeps_serving() {
    for kind in KINDS {
        let server = faulty(kind, &[]).await;
        let name = kind.name();
        let upstream = manager(&[(name, &server)], options());
        assert_eq!(call(&upstream, name, "ok").await.unwrap(), "ok");

        let malformed = fault_of(&upstream, name, "truncated").await;
        assert!(
            matches!(&malformed, Malformed::InvalidJson { detail } if detail.starts_with("EOF while parsing a string at line 1 column ")),
            "{name}: {malformed:?}"
        );
        let malformed = fault_of(&upstream, name, "invalid_utf8").await;
        assert!(
            matches!(malformed, Malformed::InvalidUtf8 { offset } if offset > 60),
            "{name}: {malformed:?}"
        );
        assert_eq!(
            fault_of(&upstream, name, "deep_result").await,
            Malformed::TooDeep {
                depth: 130,
                limit: 100
            }
        );
        assert_eq!(
            fault_of(&upstream, name, "error_without_message").await,
            Malformed::ErrorWithoutMessage
        );
        assert_eq!(
            fault_of(&upstream, name, "jsonrpc_1").await,
            Malformed::NotJsonRpc {
                version: Some("\"1.0\"".to_owned())
            }
        );
        assert_eq!(
            fault_of(&upstream, name, "bad_result").await,
            Malformed::InvalidResult {
                method: "tools/call",
                detail: "invalid type: string \"not an array\", expected a sequence".to_owned()
            }
        );

        // Still the first run, and serving.
        assert_eq!(call(&upstream, name, "ok").await.unwrap(), "ok");
        let status = &upstream.status()[0];
        assert!(status.is_ready(), "{name}: {status:?}");
        assert_eq!(status.starts, 1, "{name}");
        upstream.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_error_names_the_server_the_tool_and_the_fault() {
    let server = faulty(Kind::Stdio, &[]).await;
    let upstream = manager(&[("broken", &server)], options());
    let error = call(&upstream, "broken", "error_without_message")
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "server \"broken\" answered the call to \"error_without_message\" with a message toolweave \
         cannot read: a JSON-RPC error without a message. The server is at fault, not the call: \
         the same call will likely fail the same way (use another tool, or tell the server's \
         maintainers); the server keeps serving other calls"
    );
    upstream.shutdown().await;
}

/// An answer whose id has another JSON type than the request's (`"7"` for `7`) answers nothing:
/// on a stream it is dropped and the right answer taken; as the body answering a POST, it fails
/// that call. The same for an id never sent, and for a message with no id that does not parse.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_match_their_requests_by_the_type_and_value_of_their_ids() {
    for kind in KINDS {
        let server = faulty(kind, &[]).await;
        let name = format!("ids-{}", kind.name());
        let upstream = manager(&[(name.as_str(), &server)], options());
        if kind == Kind::Json {
            let malformed = fault_of(&upstream, &name, "string_id").await;
            assert!(
                matches!(&malformed, Malformed::IdOfAnotherType { id, sent } if *id == format!("\"{sent}\"")),
                "{malformed:?}"
            );
            let malformed = fault_of(&upstream, &name, "unknown_id").await;
            assert!(
                matches!(malformed, Malformed::UnknownId { .. }),
                "{malformed:?}"
            );
            let malformed = fault_of(&upstream, &name, "untied_then_ok").await;
            assert!(
                matches!(malformed, Malformed::InvalidJson { .. }),
                "{malformed:?}"
            );
        } else {
            assert_eq!(call(&upstream, &name, "string_id").await.unwrap(), "right");
            assert_eq!(call(&upstream, &name, "unknown_id").await.unwrap(), "right");
            assert_eq!(
                call(&upstream, &name, "untied_then_ok").await.unwrap(),
                "untied_then_ok"
            );
            let server_field = format!("server={name}");
            let dropped = super::logs().lines_with(&[
                "the server sent a message toolweave cannot use, and it was dropped",
                &server_field,
            ]);
            assert_eq!(dropped.len(), 3, "{dropped:#?}");
            assert!(
                dropped[0].contains("an answer whose id is \"")
                    && dropped[0].contains("(ids match only in type and value"),
                "{}",
                dropped[0]
            );
            assert!(
                dropped[1].contains(", which toolweave did not send"),
                "{}",
                dropped[1]
            );
            assert!(
                dropped[2].contains("invalid JSON (EOF while parsing"),
                "{}",
                dropped[2]
            );
        }
        upstream.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tool_definitions_are_left_out_one_by_one() {
    for kind in KINDS {
        let server = faulty(kind, &["--fault-tools", "malformed,deep:48,deep:70"]).await;
        let name = format!("tools-{}", kind.name());
        let upstream = manager(&[(name.as_str(), &server)], options());
        let tools = upstream.tools(&name).await.unwrap();
        let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
        let mut expected: Vec<&str> = FAULT_TOOLS.to_vec();
        // 48 schemas nest 97 levels with the tool: as deep as a tool may be.
        expected.extend(["after_the_bad_ones", "deep_schema_48"]);
        assert_eq!(names, expected, "{name}");
        assert_eq!(
            call(&upstream, &name, "deep_schema_48").await.unwrap(),
            "deep_schema_48"
        );

        let server_field = format!("server={name}");
        let left_out = super::logs().lines_with(&["out of the server's tool list", &server_field]);
        let faults: Vec<&str> = left_out
            .iter()
            .map(|line| {
                let start = line.find("left ").unwrap_or(0);
                let end = line.find(&server_field).unwrap_or(line.len());
                line[start..end].trim()
            })
            .collect();
        assert_eq!(
            faults,
            [
                "left the tool \"no_schema\" out of the server's tool list: it is not a valid tool (missing field `inputSchema`)",
                "left the tool \"schema_is_text\" out of the server's tool list: it is not a valid tool (invalid type: string \"object\", expected a map)",
                "left a tool without a name out of the server's tool list: it is not a valid tool (missing field `name`)",
                "left a tool without a name out of the server's tool list: it is not a valid tool (invalid type: integer `42`, expected a string)",
                "left the tool \"deep_schema_70\" out of the server's tool list: its definition nests 141 levels deep, deeper than the 97 toolweave reads",
            ],
            "{name}"
        );
        upstream.shutdown().await;
    }
}

/// A tool definition nested far deeper than any parser's recursion takes is left out like any
/// other: it costs that tool only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_nested_a_hundred_thousand_levels_deep_costs_only_that_tool() {
    let server = faulty(Kind::Stdio, &["--fault-tools", "deep:100000"]).await;
    let upstream = manager(&[("abyss", &server)], options());
    let tools = upstream.tools("abyss").await.unwrap();
    assert_eq!(tools.len(), FAULT_TOOLS.len());
    assert_eq!(
        super::logs()
            .lines_with(&[
                "server=abyss",
                "\"deep_schema_100000\"",
                "nests 200001 levels deep"
            ])
            .len(),
        1
    );
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_answer_to_initialize_fails_the_start_at_once() {
    for kind in [Kind::Stdio, Kind::Events, Kind::Sse] {
        let server = faulty(kind, &["--fault-initialize", "truncated"]).await;
        let name = format!("init-{}", kind.name());
        let upstream = manager(&[(name.as_str(), &server)], options());
        let started = Instant::now();
        let error = upstream.tools(&name).await.unwrap_err();
        assert!(
            started.elapsed() < AT_ONCE,
            "{name}: {:?}",
            started.elapsed()
        );
        let cause = match &error {
            // The process is stopped when its start fails: its exit is no news.
            Error::StartFailed { message, .. } if kind == Kind::Stdio => message,
            Error::Unreachable { cause, .. } if kind != Kind::Stdio => cause,
            other => panic!("{name}: {other:?}"),
        };
        assert!(
            cause.starts_with(
                "its answer to initialize cannot be read: invalid JSON (EOF while parsing"
            ),
            "{name}: {cause}"
        );
        upstream.shutdown().await;
    }
}

/// A start that times out after messages that could not be tied to a request says so: they are
/// the likely cause, and `toolweave servers` shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_that_fails_after_unreadable_messages_names_them() {
    for kind in [Kind::Stdio, Kind::Events, Kind::Sse] {
        let server = faulty(kind, &["--fault-initialize", "untied"]).await;
        let name = format!("untied-{}", kind.name());
        let upstream = manager(
            &[(name.as_str(), &server)],
            Options {
                startup_timeout: Duration::from_millis(1000),
                call_timeout: Duration::from_secs(20),
            },
        );
        let error = upstream.tools(&name).await.unwrap_err();
        let Error::UnreadableAtStart {
            server: named,
            outcome,
            count,
            first,
            ..
        } = &error
        else {
            panic!("{name}: {error:?}");
        };
        assert_eq!(named, &name);
        // A streamable HTTP server's answer ends with its event stream; the others wait.
        let expected = match kind {
            Kind::Events => format!(
                "http at {}: the connection closed before it answered initialize",
                server.entry["url"].as_str().unwrap_or_default()
            ),
            _ => "it did not finish starting within 1000 ms (--startup-timeout-ms) and was stopped"
                .to_owned(),
        };
        assert_eq!(outcome, &expected);
        assert_eq!(*count, 1);
        assert!(
            matches!(**first, Malformed::InvalidJson { .. }),
            "{first:?}"
        );
        assert!(
            error.to_string().starts_with(&format!(
                "server \"{name}\" failed to start ({expected}); it sent 1 message toolweave could \
                 not read, the first: invalid JSON (EOF while parsing an object at line 1 column \
                 27). It does not speak MCP as toolweave expects"
            )),
            "{error}"
        );
        assert_eq!(upstream.status()[0].error(), Some(&error));
        upstream.shutdown().await;
    }
}

fn timeout_of(error: Error) -> (Delivery, String) {
    let text = error.to_string();
    match error {
        Error::CallTimeout { delivery, .. } => (delivery, text),
        other => panic!("{other:?}"),
    }
}

/// Saturation, made certain: the runtime's one thread is held (as guest work or a flood of
/// messages would hold it) from the moment the call is queued until after its deadline. The
/// server never answers, so only the timeout can end the call; its error says the time went
/// before the call was sent, and does not blame the server.
#[tokio::test]
async fn a_call_toolweave_was_too_busy_to_send_in_time_does_not_blame_the_server() {
    let server = faulty(Kind::Stdio, &[]).await;
    let upstream = manager(&[("patient", &server)], options());
    assert_eq!(call(&upstream, "patient", "ok").await.unwrap(), "ok");
    // Spawned first, it runs as soon as the call waits: before the request can be written.
    let held = tokio::spawn(async { std::thread::sleep(Duration::from_millis(600)) });
    let error = upstream
        .call_tool_with(
            "patient",
            "silent",
            Some(Map::new()),
            CallOptions {
                timeout: Some(Duration::from_millis(200)),
                ..CallOptions::default()
            },
        )
        .await
        .unwrap_err();
    held.await.unwrap();
    let (delivery, text) = timeout_of(error);
    let Delivery::Sent {
        waited,
        upstream: server_time,
    } = delivery
    else {
        panic!("{delivery:?}");
    };
    assert!(waited >= Duration::from_millis(500), "{delivery:?}");
    assert!(server_time < waited, "{delivery:?}");
    assert!(
        text.starts_with(
            "the call to \"silent\" on server \"patient\" was not answered within 200 ms \
             (the timeout given to the call), most of it spent in toolweave: it waited "
        ),
        "{text}"
    );
    assert!(
        text.ends_with(
            "toolweave itself was too busy (too many executions at once, or executions busy \
             computing), so the server is not the likely cause. Retry when toolweave is less \
             busy, run fewer executions at once, or raise the timeout given to the call"
        ),
        "{text}"
    );
    upstream.shutdown().await;
}

/// A call its caller took long before: the timeout runs from then, and the time went in toolweave
/// before the call could even reach the connection. (One thread: on several, rmcp's task could
/// write the request before the timeout is seen.)
#[tokio::test]
async fn the_timeout_runs_from_when_the_call_was_taken() {
    let server = faulty(Kind::Stdio, &[]).await;
    let upstream = manager(&[("late", &server)], options());
    assert_eq!(call(&upstream, "late", "ok").await.unwrap(), "ok");
    let taken = tokio::time::Instant::now() - Duration::from_millis(400);
    let error = upstream
        .call_tool_with(
            "late",
            "silent",
            Some(Map::new()),
            CallOptions {
                timeout: Some(Duration::from_millis(300)),
                taken: Some(taken),
                ..CallOptions::default()
            },
        )
        .await
        .unwrap_err();
    let (delivery, text) = timeout_of(error);
    assert!(
        matches!(delivery, Delivery::Queued { waited } if waited >= Duration::from_millis(400)),
        "{delivery:?}"
    );
    assert!(
        text.starts_with(
            "the call to \"silent\" on server \"late\" was not answered within 300 ms \
             (the timeout given to the call) because it was never sent: it waited "
        ),
        "{text}"
    );
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_does_not_answer_is_blamed() {
    let server = faulty(Kind::Stdio, &[]).await;
    let upstream = manager(&[("slow", &server)], options());
    assert_eq!(call(&upstream, "slow", "ok").await.unwrap(), "ok");
    let error = upstream
        .call_tool_with(
            "slow",
            "silent",
            Some(Map::new()),
            CallOptions {
                timeout: Some(Duration::from_millis(300)),
                ..CallOptions::default()
            },
        )
        .await
        .unwrap_err();
    let (delivery, text) = timeout_of(error);
    let Delivery::Sent {
        waited,
        upstream: server_time,
    } = delivery
    else {
        panic!("{delivery:?}");
    };
    assert!(server_time > waited, "{delivery:?}");
    assert!(
        text.starts_with(
            "server \"slow\" did not answer the call to \"silent\" within 300 ms \
             (the timeout given to the call): it had "
        ),
        "{text}"
    );
    assert!(
        text.ends_with(
            "the call was cancelled. Ask for less in one call, or raise the timeout given to the call"
        ),
        "{text}"
    );
    upstream.shutdown().await;
}

/// A server that stops reading its input: a large call cannot be written to it. The error says
/// the server did not take the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_reading_is_named() {
    let server = faulty(Kind::Stdio, &[]).await;
    let upstream = manager(&[("deaf", &server)], options());
    assert_eq!(
        call(&upstream, "deaf", "deaf").await.unwrap(),
        "ok; not reading any more"
    );
    // Far more than a pipe holds.
    let mut arguments = Map::new();
    arguments.insert("text".to_owned(), json!("x".repeat(4 * 1024 * 1024)));
    let error = upstream
        .call_tool_with(
            "deaf",
            "ok",
            Some(arguments),
            CallOptions {
                timeout: Some(Duration::from_millis(300)),
                ..CallOptions::default()
            },
        )
        .await
        .unwrap_err();
    let (delivery, text) = timeout_of(error);
    assert!(
        matches!(delivery, Delivery::Unwritten { blocked, .. } if blocked >= Duration::from_millis(200)),
        "{delivery:?}"
    );
    assert!(
        text.starts_with(
            "server \"deaf\" did not take the call to \"ok\" within 300 ms (the timeout given to the \
             call): \
             it stopped reading its input"
        ),
        "{text}"
    );
    upstream.shutdown().await;
}

/// Over streamable HTTP, an answer longer than toolweave reads fails its call at once, and the
/// connection goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_too_large_over_http_fails_its_call_and_the_connection_stays() {
    let remote = RemoteFixture::start(&["--http", "127.0.0.1:0", "--name", "big"])
        .await
        .unwrap_or_else(|error| panic!("{error:#}"));
    let server = Faulty {
        entry: json!({ "type": "http", "url": remote.url }),
        _remote: None,
    };
    let upstream = manager(&[("big", &server)], options());
    let mut arguments = Map::new();
    arguments.insert("bytes".to_owned(), json!(64 * 1024 * 1024));
    let started = Instant::now();
    let error = upstream
        .call_tool(
            "big",
            "large",
            Some(arguments),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(
            &error,
            Error::UnreadableAnswer {
                malformed: Malformed::TooLarge { limit_mib: 64 },
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("a message longer than 64 MiB, which toolweave does not accept (a tool result that large: ask the tool for less)"),
        "{error}"
    );
    let mut arguments = Map::new();
    arguments.insert("a".to_owned(), json!(2));
    arguments.insert("b".to_owned(), json!(3));
    let sum = upstream
        .call_tool(
            "big",
            "add",
            Some(arguments),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        sum.content[0].as_text().map(|text| text.text.as_str()),
        Some("5")
    );
    assert_eq!(upstream.status()[0].starts, 1);
    upstream.shutdown().await;
    drop(remote);
}
