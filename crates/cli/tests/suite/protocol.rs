//! The MCP face: exactly three small tools, search, describe, argument errors, raw protocol errors.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use toolweave_testkit::harness::{Toolweave, fixture_config};

use super::toolweave;

/// tokens of the compact JSON of a tools/list answer, as cl100k counts them.
pub fn tools_list_tokens(tools: &[rmcp::model::Tool]) -> usize {
    let text = serde_json::to_string(&json!({ "tools": tools })).unwrap();
    tiktoken_rs::cl100k_base_singleton()
        .encode_with_special_tokens(&text)
        .len()
}

#[tokio::test]
async fn tools_list_is_three_small_tools() {
    let (_dir, config) = fixture_config(&["alpha", "fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    let tools = server.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(names, ["search_tools", "describe_tools", "execute_code"]);
    let execute = tools[2].description.as_deref().unwrap_or_default();
    assert!(execute.contains("Servers: alpha, fixture."), "{execute}");
    let tokens = tools_list_tokens(&tools);
    assert!(tokens <= 600, "tools/list costs {tokens} tokens");
    insta::assert_json_snapshot!("tools_list", tools);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn search_ranks_the_adder_first_and_describe_declares_it() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    let found = server
        .call(
            "search_tools",
            json!({ "query": "add two numbers", "limit": 3 }),
        )
        .await
        .unwrap();
    let results = &found.structured_content.as_ref().unwrap()["results"];
    let first = results[0]["name"].as_str().unwrap();
    assert!(
        ["fixture.add", "fixture.get_sum"].contains(&first),
        "{results}"
    );
    assert!(results.as_array().unwrap().len() <= 3);

    let described = server
        .call(
            "describe_tools",
            json!({ "names": ["fixture.add", "fixture.nope"] }),
        )
        .await
        .unwrap();
    assert_ne!(described.is_error, Some(true));
    let structured = described.structured_content.unwrap();
    assert_eq!(structured["tools"][0]["name"], "fixture.add");
    assert_eq!(
        structured["tools"][0]["inputSchema"]["required"],
        json!(["a", "b"])
    );
    let text = described.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("add(args: "), "{text}");
    assert!(text.contains("no tool named \"fixture.nope\""), "{text}");

    let nothing = server
        .call("describe_tools", json!({ "names": ["nothing.here"] }))
        .await
        .unwrap();
    assert_eq!(nothing.is_error, Some(true));
    // The model searches with the MCP tool, so that is the name the hint gives.
    let text = nothing.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("use search_tools(\""), "{text}");

    // The same in Python: keyword-argument signatures and stubs.
    let found = server
        .call(
            "search_tools",
            json!({ "query": "add two numbers", "limit": 1, "language": "python" }),
        )
        .await
        .unwrap();
    let first = &found.structured_content.unwrap()["results"][0];
    assert!(
        first["signature"]
            .as_str()
            .unwrap()
            .ends_with("(*, a: float, b: float) -> Any"),
        "{first}"
    );
    let described = server
        .call(
            "describe_tools",
            json!({ "names": ["fixture.add"], "language": "python" }),
        )
        .await
        .unwrap();
    let text = described.content[0].as_text().unwrap().text.clone();
    assert!(
        text.contains("async def add(*, a: float, b: float) -> Any:"),
        "{text}"
    );
    let failed = server
        .call(
            "describe_tools",
            json!({ "names": ["fixture.add"], "language": "cobol" }),
        )
        .await
        .unwrap();
    assert_eq!(failed.is_error, Some(true));
    let text = &failed.content[0].as_text().unwrap().text;
    assert!(text.contains("unknown \"language\""), "{text}");
    server.stop().await.unwrap();
}

/// Arguments a tool cannot use, and tools that do not exist, are failed calls the model reads
/// (`isError`, with what to change), as MCP asks for input errors.
#[tokio::test]
async fn malformed_tool_arguments_are_failed_calls() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    for (tool, arguments, expected) in [
        (
            "execute_code",
            json!({ "source": "1" }),
            "\"code\" is required",
        ),
        (
            "execute_code",
            json!({ "code": "1", "language": "cobol" }),
            "unknown \"language\"",
        ),
        (
            "search_tools",
            json!({ "limit": -1 }),
            "\"limit\" must be a positive integer",
        ),
        ("no_such_tool", json!({}), "toolweave has search_tools"),
    ] {
        let result = server.call(tool, arguments).await.unwrap();
        assert_eq!(result.is_error, Some(true), "{tool}: {result:?}");
        let text = &result.content[0].as_text().unwrap().text;
        assert!(text.contains(expected), "{tool}: {text}");
        let structured = result.structured_content.unwrap();
        assert_eq!(structured["error"]["kind"], "invalid_arguments");
    }
    // The session is still usable.
    let ok = server.execute("return 40 + 2", "typescript").await.unwrap();
    assert_eq!(ok.value().unwrap(), &json!(42));
    server.stop().await.unwrap();
}

/// Raw lines on stdin: garbage and unknown methods get JSON-RPC errors and the server keeps
/// serving; nothing but protocol appears on stdout.
#[test]
fn raw_stdio_survives_bad_input() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let mut child = Command::new(toolweave())
        .args(["serve", "--config"])
        .arg(&config)
        .env("TOOLWEAVE_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut text).unwrap();
        text
    });
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |line: &str| {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    let mut read = || -> Value {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout is not JSON-RPC: {line:?}: {e}"))
    };
    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
    );
    let init = read();
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["serverInfo"]["name"], "toolweave");
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    send(r#"{"jsonrpc":"2.0","id":2,"method":"no/such/method"}"#);
    let unknown = read();
    assert_eq!(unknown["id"], 2);
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    send("this is not json");
    send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#);
    let mut answer = read();
    // A parse error answer (id null) may come first; the tools/list answer must follow.
    if answer["id"] != 3 {
        assert!(answer["error"].is_object(), "{answer}");
        answer = read();
    }
    assert_eq!(answer["id"], 3);
    assert_eq!(answer["result"]["tools"].as_array().unwrap().len(), 3);
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    // The line that was not JSON-RPC is named on stderr, with its number.
    let log = log.join().unwrap();
    assert!(
        log.contains(
            "stdin line 4 is not a JSON-RPC message (it begins \"this is not json\") and was ignored"
        ),
        "{log}"
    );
}

/// An upstream server that announces a new tool list (`notifications/tools/list_changed`) is
/// listed again: search, describe, typings and calls see the new tool without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_tool_list_reaches_search_describe_and_calls() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    let registered = server
        .execute(
            "return await tools.fixture.register({ name: 'freshly_added' })",
            "javascript",
        )
        .await
        .unwrap();
    assert_eq!(
        registered.value().unwrap(),
        &json!("registered freshly_added")
    );
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let found = server
            .call("search_tools", json!({ "query": "freshly_added" }))
            .await
            .unwrap();
        let results = found.structured_content.unwrap()["results"].clone();
        if results
            .as_array()
            .unwrap()
            .iter()
            .any(|hit| hit["name"] == "fixture.freshly_added")
        {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "the new tool never appeared: {results}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let described = server
        .call(
            "describe_tools",
            json!({ "names": ["fixture.freshly_added"] }),
        )
        .await
        .unwrap();
    assert_ne!(described.is_error, Some(true), "{described:?}");
    let called = server
        .execute("return await tools.fixture.freshly_added({})", "javascript")
        .await
        .unwrap();
    assert_eq!(
        called.value().unwrap(),
        &json!("freshly_added"),
        "{}",
        called.text
    );
    server.stop().await.unwrap();
}

/// `--rate-limit` over stdio: the one session gets that many executions, then a refusal that says
/// how long to wait; search and describe are not executions and still answer.
#[tokio::test]
async fn the_rate_limit_holds_over_stdio() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &["--rate-limit", "2"])
        .await
        .unwrap();
    for language in ["javascript", "python"] {
        let ok = server.execute("1 + 1", language).await.unwrap();
        assert!(!ok.is_error, "{}", ok.text);
    }
    let refused = server.execute("return 1", "javascript").await.unwrap();
    assert!(refused.is_error, "{}", refused.text);
    assert_eq!(refused.error_kind(), Some("RateLimit"), "{}", refused.text);
    assert!(
        refused
            .text
            .contains("2 executions a minute (--rate-limit); try again in"),
        "{}",
        refused.text
    );
    let wait = refused.structured["error"]["retryAfterMs"]
        .as_u64()
        .unwrap();
    assert!((1..=30_000).contains(&wait), "{wait}");
    let found = server
        .call("search_tools", json!({ "query": "add two numbers" }))
        .await
        .unwrap();
    assert_ne!(found.is_error, Some(true), "{found:?}");
}
