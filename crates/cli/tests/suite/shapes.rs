//! The tools `serve` lists: `--shape single` (execute_code alone, declaring every tool in its
//! description) and `--direct GLOB` (upstream tools listed beside toolweave's own, called on the
//! path a call from code takes), both following changes of the upstream tool lists.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam, ServerResult,
    Tool,
};
use rmcp::service::PeerRequestOptions;
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};
use toolweave_testkit::harness::{Toolweave, fixture_config, serve_with};

use super::toolweave;

/// A client that notes `notifications/tools/list_changed` and keeps progress notifications.
#[derive(Clone, Default)]
struct Watching {
    changes: std::sync::Arc<tokio::sync::Notify>,
    progress: std::sync::Arc<std::sync::Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Watching {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changes.notify_one();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}

async fn call(
    client: &RunningService<RoleClient, Watching>,
    name: &str,
    arguments: Value,
) -> rmcp::model::CallToolResult {
    let Value::Object(arguments) = arguments else {
        unreachable!("a literal object");
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))
        .await
        .unwrap()
}

fn text(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn names(tools: &[Tool]) -> Vec<String> {
    tools.iter().map(|tool| tool.name.to_string()).collect()
}

fn description(tool: &Tool) -> String {
    tool.description.as_deref().unwrap_or_default().to_owned()
}

/// Waits for a list change, then lists again until `done` says the list is the new one.
async fn list_after_change(
    client: &RunningService<RoleClient, Watching>,
    changes: &tokio::sync::Notify,
    done: impl Fn(&[Tool]) -> bool,
) -> Vec<Tool> {
    if tokio::time::timeout(Duration::from_secs(15), changes.notified())
        .await
        .is_err()
    {
        panic!("no notifications/tools/list_changed within 15 s");
    }
    let tools = client.list_all_tools().await.unwrap();
    assert!(done(&tools), "the list after the change: {tools:#?}");
    tools
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_single_shape_declares_every_allowed_tool_and_runs_code() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(
        toolweave(),
        &config,
        &["--shape", "single", "--deny", "fixture.echo"],
    )
    .await
    .unwrap();
    let tools = server.list_tools().await.unwrap();
    assert_eq!(names(&tools), ["execute_code"]);
    let described = description(&tools[0]);
    for declared in [
        "declare namespace tools.fixture {",
        "/** Add two numbers and return their sum. */",
        "function add(args: {",
        "function get_sum(",
        "function structured(",
    ] {
        assert!(described.contains(declared), "{declared} in {described}");
    }
    assert!(
        !described.contains("function echo("),
        "a denied tool is not declared: {described}"
    );
    assert!(
        !described.contains("Find tools with search_tools"),
        "{described}"
    );
    assert!(!described.contains("Not available now"), "{described}");
    let sum = server
        .execute(
            "return await tools.fixture.add({ a: 2, b: 3 })",
            "typescript",
        )
        .await
        .unwrap();
    assert_eq!(sum.value().unwrap(), &json!("5"));
    let search = server
        .call("search_tools", json!({ "query": "add" }))
        .await
        .unwrap();
    assert_eq!(search.is_error, Some(true));
    assert!(
        text(&search).contains("unknown tool \"search_tools\": toolweave has execute_code"),
        "{search:?}"
    );
    server.stop().await.unwrap();
}

/// A server that starts after discovery stops waiting is not declared at first, named as
/// starting; once it is ready the client is told, and the description declares its tools. A tool
/// an upstream server adds later is declared, and listed directly when a glob matches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_single_shape_and_direct_tools_follow_late_servers_and_list_changes() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = toolweave_testkit::fixture_binary();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({ "mcpServers": {
            "fixture": { "command": fixture, "args": ["--name", "fixture"] },
            "late": { "command": fixture, "args": ["--name", "late", "--start-delay-ms", "3500"] },
        }})
        .to_string(),
    )
    .unwrap();
    let watching = Watching::default();
    let changes = watching.changes.clone();
    let (client, _) = serve_with(
        toolweave(),
        &config,
        &[
            "--shape",
            "single",
            "--direct",
            "*.fresh*",
            "--direct",
            "late.whoami",
        ],
        &[],
        watching,
    )
    .await
    .unwrap();
    let capabilities = client
        .peer_info()
        .unwrap()
        .capabilities
        .tools
        .clone()
        .unwrap();
    assert_eq!(capabilities.list_changed, Some(true));

    let started = Instant::now();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(names(&tools), ["execute_code"]);
    let first = description(&tools[0]);
    assert!(
        first.contains("declare namespace tools.fixture {"),
        "{first}"
    );
    assert!(!first.contains("declare namespace tools.late {"), "{first}");
    assert!(
        first.contains("Not available now: late (starting)"),
        "{first}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    let tools = list_after_change(&client, &changes, |tools| {
        description(&tools[0]).contains("declare namespace tools.late {")
    })
    .await;
    assert_eq!(names(&tools), ["execute_code", "late__whoami"]);
    assert!(!description(&tools[0]).contains("Not available now"));
    let whoami = call(&client, "late__whoami", json!({})).await;
    assert_eq!(text(&whoami), "late");

    let registered = call(
        &client,
        "execute_code",
        json!({ "code": "return await tools.fixture.register({ name: 'freshly_added' })" }),
    )
    .await;
    assert_eq!(registered.is_error, Some(false), "{registered:?}");
    let tools = list_after_change(&client, &changes, |tools| {
        names(tools).contains(&"fixture__freshly_added".to_owned())
    })
    .await;
    assert!(
        description(&tools[0]).contains("function freshly_added("),
        "{}",
        description(&tools[0])
    );
    let fresh = call(&client, "fixture__freshly_added", json!({})).await;
    assert_eq!(text(&fresh), "freshly_added");
    client.cancel().await.unwrap();
}

/// Tools listed directly keep their own description, schemas and annotations, and come in the
/// order of their names; a call answers as the server did, and goes through the checks a call
/// from code does: argument validation, the policy (a denied tool is never listed), approval of
/// destructive tools, and the audit log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_tools_are_listed_called_checked_and_audited() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let audit = dir.path().join("audit.jsonl");
    let audit_arg = audit.display().to_string();
    let server = Toolweave::start(
        toolweave(),
        &config,
        &[
            "--approval",
            "elicitation",
            "--direct",
            "fixture.add",
            "--direct",
            "fixture.dotted.name",
            "--direct",
            "fixture.structured",
            "--direct",
            "fixture.remove",
            "--direct",
            "fixture.e*",
            "--deny",
            "fixture.echo",
            "--audit-log",
            &audit_arg,
        ],
    )
    .await
    .unwrap();
    let tools = server.list_tools().await.unwrap();
    assert_eq!(
        names(&tools),
        [
            "search_tools",
            "describe_tools",
            "execute_code",
            "fixture__add",
            "fixture__dotted_name",
            "fixture__env",
            "fixture__remove",
            "fixture__structured",
        ]
    );
    let add = &tools[3];
    assert_eq!(description(add), "Add two numbers and return their sum.");
    assert_eq!(
        add.input_schema["required"],
        json!(["a", "b"]),
        "{:?}",
        add.input_schema
    );
    assert!(tools[7].output_schema.is_some(), "{:?}", tools[7]);
    let remove = tools[6].annotations.clone().unwrap();
    assert_eq!(remove.destructive_hint, Some(true));

    let sum = server
        .call("fixture__add", json!({ "a": 2, "b": 3 }))
        .await
        .unwrap();
    assert_eq!(sum.is_error, Some(false), "{sum:?}");
    assert_eq!(text(&sum), "5");
    let weather = server
        .call("fixture__structured", json!({ "city": "Paris" }))
        .await
        .unwrap();
    assert_eq!(weather.structured_content.unwrap()["city"], "Paris");
    let dotted = server
        .call("fixture__dotted_name", json!({}))
        .await
        .unwrap();
    assert_eq!(text(&dotted), "dotted.name");

    let invalid = server
        .call("fixture__add", json!({ "a": "two", "b": 3 }))
        .await
        .unwrap();
    assert_eq!(invalid.is_error, Some(true));
    assert!(
        text(&invalid).starts_with("invalid arguments for fixture.add:"),
        "{}",
        text(&invalid)
    );
    let removed = server
        .call("fixture__remove", json!({ "name": "x" }))
        .await
        .unwrap();
    assert_eq!(removed.is_error, Some(true));
    assert!(
        text(&removed).contains("was not called: its server marks it destructive"),
        "{}",
        text(&removed)
    );
    let denied = server
        .call("fixture__echo", json!({ "message": "hi" }))
        .await
        .unwrap();
    assert_eq!(denied.is_error, Some(true));
    assert!(
        text(&denied).starts_with("unknown tool \"fixture__echo\": toolweave has search_tools"),
        "{}",
        text(&denied)
    );
    server.stop().await.unwrap();

    let log = std::fs::read_to_string(&audit).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let direct: Vec<&Value> = lines
        .iter()
        .filter(|line| line["direct"].is_string())
        .collect();
    assert_eq!(direct.len(), 5, "{log}");
    assert_eq!(direct[0]["direct"], "fixture.add");
    assert_eq!(direct[0]["outcome"], "ok");
    assert_eq!(direct[0]["toolCalls"][0]["name"], "fixture.add");
    assert_eq!(direct[0]["toolCalls"][0]["outcome"], "ok");
    assert_eq!(direct[3]["outcome"], "error", "{log}");
    assert_eq!(direct[4]["direct"], "fixture.remove");
    assert_eq!(direct[4]["outcome"], "denied");
    assert_eq!(direct[4]["deniedCalls"], 1);
    assert_eq!(direct[4]["toolCalls"][0]["approval"], "unavailable");
}

#[test]
fn a_direct_glob_that_is_wrong_or_matches_nothing_is_named() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let output = Command::new(toolweave())
        .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
        .args(["serve", "--config"])
        .arg(&config)
        .args(["--direct", "add"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "--direct rule \"add\": a rule names server.tool or mcp__server__tool, such as \"add.*\" for every tool of a server \"add\" or \"*.add\""
        ),
        "{stderr}"
    );

    let mut child = Command::new(toolweave())
        .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
        .args(["serve", "--config"])
        .arg(&config)
        .args([
            "--direct",
            "fixture.ad",
            "--direct",
            "fixture.echo",
            "--deny",
            "fixture.echo",
        ])
        .env("TOOLWEAVE_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, log) = mpsc::channel();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in stderr.lines() {
            let Ok(line) = line else { return };
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(
            concat!(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                "\n"
            )
            .as_bytes(),
        )
        .unwrap();
    stdin.flush().unwrap();
    let mut seen = Vec::new();
    let wanted = [
        "--direct \"fixture.ad\" matches no tool; did you mean fixture.add",
        "--direct \"fixture.echo\" lists nothing: the tools it matches (fixture.echo) are kept from clients and code by the policy",
    ];
    let until = Instant::now() + Duration::from_secs(15);
    while !wanted
        .iter()
        .all(|warning| seen.iter().any(|line: &String| line.contains(warning)))
    {
        let left = until.saturating_duration_since(Instant::now());
        match log.recv_timeout(left) {
            Ok(line) => seen.push(line),
            Err(_) => panic!("no warning for each glob within 15 s: {seen:#?}"),
        }
    }
    drop(stdin);
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    assert!(child.wait().unwrap().success());
}

/// Sends `tools/call` of `name` as a request the test can cancel, with a progress token.
async fn start_call(
    client: &RunningService<RoleClient, Watching>,
    name: &str,
    arguments: Value,
) -> rmcp::service::RequestHandle<RoleClient> {
    let Value::Object(arguments) = arguments else {
        unreachable!("a literal object");
    };
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new(name.to_owned()).with_arguments(arguments),
    ));
    client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap()
}

/// A call of a tool listed directly passes the upstream server's progress on as progress of the
/// client's request, and the client's cancellation on to the upstream server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_calls_carry_progress_and_cancellation() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let watching = Watching::default();
    let progress = watching.progress.clone();
    let (client, _) = serve_with(
        toolweave(),
        &config,
        &["--direct", "fixture.slow", "--direct", "fixture.stats"],
        &[],
        watching,
    )
    .await
    .unwrap();
    let handle = start_call(&client, "fixture__slow", json!({ "ms": 20 })).await;
    let token = handle.progress_token.clone();
    let ServerResult::CallToolResult(done) = handle.await_response().await.unwrap() else {
        panic!("not a tool result");
    };
    assert_eq!(text(&done), "done");
    let until = Instant::now() + Duration::from_secs(5);
    let messages = loop {
        let messages: Vec<String> = progress
            .lock()
            .unwrap()
            .iter()
            .filter(|params| params.progress_token == token)
            .filter_map(|params| params.message.clone())
            .collect();
        if messages.len() == 2 || Instant::now() > until {
            break messages;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(
        messages.contains(&"fixture.slow: 1/2 waiting".to_owned()),
        "{messages:?}"
    );

    let handle = start_call(&client, "fixture__slow", json!({ "ms": 30000 })).await;
    let counts = async || {
        call(&client, "fixture__stats", json!({}))
            .await
            .structured_content
            .unwrap()["slow"]
            .clone()
    };
    let until = Instant::now() + Duration::from_secs(10);
    while counts().await["started"] != 2 {
        assert!(Instant::now() < until, "the slow call never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    handle.cancel(Some("changed my mind".into())).await.unwrap();
    while counts().await["cancelled"] != 1 {
        assert!(
            Instant::now() < until,
            "the upstream call was not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(counts().await["finished"], 1);
    client.cancel().await.unwrap();
}
