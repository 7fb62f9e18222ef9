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
    assert_eq!(
        structured["tools"],
        json!([{ "name": "fixture.add", "server": "fixture", "tool": "add" }])
    );
    let text = described.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("add(args: "), "{text}");
    assert!(text.contains("no tool named \"fixture.nope\""), "{text}");
    // The JSON Schemas come when asked for.
    let with_schemas = server
        .call(
            "describe_tools",
            json!({ "names": ["fixture.add"], "schemas": true }),
        )
        .await
        .unwrap();
    // In the text the model reads too, not only in structuredContent.
    let text = with_schemas.content[0].as_text().unwrap().text.clone();
    assert!(
        text.contains("JSON Schema of fixture.add's arguments: {")
            && text.contains("\"required\":[\"a\",\"b\"]"),
        "{text}"
    );
    let structured = with_schemas.structured_content.unwrap();
    assert_eq!(
        structured["tools"][0]["inputSchema"]["required"],
        json!(["a", "b"])
    );
    assert!(
        !described.content[0]
            .as_text()
            .unwrap()
            .text
            .contains("JSON Schema of")
    );

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
    let text = found.content[0].as_text().unwrap().text.clone();
    assert!(
        text.lines()
            .next()
            .unwrap()
            .ends_with("(*, a: float, b: float) -> Any"),
        "{text}"
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

/// A describe answer is the declarations: one namespace block per server, each tool once
/// however many of the names spell it; its structured copy names the tools and costs less than
/// the text.
#[tokio::test]
async fn describe_answers_one_block_per_server_and_each_tool_once() {
    let (_dir, config) = fixture_config(&["alpha", "fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    for (language, block, function) in [
        (
            "typescript",
            "declare namespace tools.",
            "function add(args",
        ),
        ("python", ":  # tools.", "    async def add("),
    ] {
        let described = server
            .call(
                "describe_tools",
                json!({
                    "names": ["fixture.add", "mcp__fixture__add", "alpha.add", "tools.fixture.add", "fixture"],
                    "language": language,
                }),
            )
            .await
            .unwrap();
        assert_ne!(described.is_error, Some(true), "{described:?}");
        let text = &described.content[0].as_text().unwrap().text;
        let blocks: Vec<&str> = text.lines().filter(|line| line.contains(block)).collect();
        assert_eq!(blocks.len(), 2, "{language}: {text}");
        assert!(
            blocks[0].contains("fixture") && blocks[1].contains("alpha"),
            "{blocks:?}"
        );
        assert_eq!(text.matches(function).count(), 2, "{language}: {text}");
        let structured = described.structured_content.unwrap();
        let names: Vec<&str> = structured["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        let fixture_tools = names
            .iter()
            .filter(|name| name.starts_with("fixture."))
            .count();
        assert_eq!(names[..2], ["fixture.add", "alpha.add"]);
        assert_eq!(names.len(), fixture_tools + 1, "{names:?}");
        let mut distinct = names.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), names.len(), "{names:?}");
        let text_tokens = tokens(text);
        let structured_tokens = tokens(&structured.to_string());
        assert!(
            structured_tokens < text_tokens,
            "{language}: structured {structured_tokens} tokens, text {text_tokens}"
        );
    }
    server.stop().await.unwrap();
}

/// o200k tokens of `text`.
fn tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_with_special_tokens(text)
        .len()
}

/// By default a result may be 24 KiB of JSON (some 6,000 tokens): one answer does not fill the
/// model's context. A larger one is kept behind a handle, and the answer says how to read it;
/// where no handle may be kept, it is refused saying how to return less.
#[tokio::test]
async fn the_default_result_budget_protects_the_context() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    let within = server
        .execute("return 'x'.repeat(24 * 1024 - 2)", "javascript")
        .await
        .unwrap();
    assert!(!within.is_error, "{}", within.text);
    for (code, language) in [
        ("return 'x'.repeat(24 * 1024 - 1)", "javascript"),
        ("'x' * (24 * 1024 - 1)", "python"),
    ] {
        let over = server.execute(code, language).await.unwrap();
        assert!(!over.is_error, "{}", over.text);
        let kept = &over.structured["result"];
        let handle = kept["handle"].as_str().unwrap();
        assert_eq!(kept["bytes"], json!(24577));
        assert_eq!(kept["shape"], json!("string(24575)"));
        let warning = over.structured["warnings"][0].as_str().unwrap();
        let read = if language == "python" {
            format!("await results.get(\"{handle}\", offset=0, limit=100)")
        } else {
            format!("await results.get(\"{handle}\", {{ offset: 0, limit: 100 }})")
        };
        assert_eq!(
            warning,
            format!(
                "The result is 24577 bytes as JSON, more than an answer carries (--max-result-bytes 24576), so it is kept in this session as result handle \"{handle}\" for 900 s (--handle-ttl-ms 900000); the answer holds its size, a preview and its shape (keys and types, lengths in characters and items). Read what the task needs in a later execute_code: {read} (path into the value, like \"items.3.name\"; offset and limit count characters of a string or items of an array), or the whole value with results.get(\"{handle}\") to pass it on."
            )
        );
    }
    server.stop().await.unwrap();

    let server = Toolweave::start(toolweave(), &config, &["--max-handle-bytes", "0"])
        .await
        .unwrap();
    for (code, language) in [
        ("return 'x'.repeat(24 * 1024 - 1)", "javascript"),
        ("'x' * (24 * 1024 - 1)", "python"),
    ] {
        let over = server.execute(code, language).await.unwrap();
        assert_eq!(over.error_kind(), Some("ResultTooLarge"), "{}", over.text);
        assert_eq!(
            over.text,
            "ResultTooLarge: the result is 24577 bytes as JSON, over the limit of 24576 (--max-result-bytes 24576), which keeps answers from filling the context. Return only what the task needs: filter the data in code, keep the fields you use, count or summarize, or return the first items (slice) and ask for more in the next run."
        );
    }
    server.stop().await.unwrap();
}

/// The value comes back as compact JSON (indentation would cost the model more tokens than the
/// value itself), and the structured copy holds what `execute_code`'s output schema declares.
#[tokio::test]
async fn the_value_is_compact_json() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    let executed = server
        .execute(
            r#"console.log("sum", await tools.fixture.add({ a: 1, b: 2 }));
            return { total: { of: [1, 2], is: 3 }, note: "a b" };"#,
            "javascript",
        )
        .await
        .unwrap();
    assert_eq!(
        executed.text,
        "{\"total\":{\"of\":[1,2],\"is\":3},\"note\":\"a b\"}\n\n--- console ---\nsum 3"
    );
    // The structured copy is what the output schema declares: the console lines are not in it.
    let keys = |structured: &Value| -> Vec<String> {
        structured.as_object().unwrap().keys().cloned().collect()
    };
    assert_eq!(keys(&executed.structured), ["result", "stats"]);
    assert_eq!(
        executed.structured["stats"]["logBytes"],
        json!("sum 3".len())
    );
    let failed = server
        .execute("console.log('before'); null.x", "javascript")
        .await
        .unwrap();
    assert_eq!(keys(&failed.structured), ["error", "stats"]);
    assert_eq!(failed.structured["error"]["kind"], "GuestError");
    assert!(
        failed.text.ends_with("\n\n--- console ---\nbefore"),
        "{}",
        failed.text
    );
    server.stop().await.unwrap();
}

/// An argument a tool does not read is named in a warning, with what the tool takes, and the
/// tool still runs; a misspelled one, the argument it most likely meant. `allowedTools` and
/// `timeoutMs` are read, and within what the gateway allows, say nothing.
#[tokio::test]
async fn unknown_arguments_are_warnings_and_the_tool_still_runs() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &["--timeout-ms", "5000"])
        .await
        .unwrap();
    let executed = server
        .call(
            "execute_code",
            json!({
                "code": "return 40 + 2",
                "allowedTools": ["fixture.add"],
                "timeoutMs": 1000,
                "lang": "typescript",
            }),
        )
        .await
        .unwrap();
    assert_ne!(executed.is_error, Some(true), "{executed:?}");
    let text = &executed.content[0].as_text().unwrap().text;
    assert_eq!(
        text,
        "42\n\
         Warning: \"lang\" is not an argument of execute_code; it was ignored. Did you mean \"language\"? execute_code takes \"code\", \"language\", \"allowedTools\", \"timeoutMs\", \"session\", \"resume\"."
    );
    let structured = executed.structured_content.unwrap();
    assert_eq!(structured["result"], json!(42));
    assert_eq!(structured["warnings"].as_array().unwrap().len(), 1);

    let found = server
        .call(
            "search_tools",
            json!({ "query": "add two numbers", "max_results": 2 }),
        )
        .await
        .unwrap();
    assert_ne!(found.is_error, Some(true), "{found:?}");
    let text = &found.content[0].as_text().unwrap().text;
    assert!(
        text.ends_with(
            "\nWarning: \"max_results\" is not an argument of search_tools; it was ignored. Did you mean \"limit\"? search_tools takes \"query\", \"limit\", \"language\"."
        ),
        "{text}"
    );
    assert!(text.contains("fixture.add"), "{text}");

    // A call that fails for its arguments also names the ones it did not read.
    let failed = server
        .call("describe_tools", json!({ "tools": ["fixture.add"] }))
        .await
        .unwrap();
    assert_eq!(failed.is_error, Some(true));
    let text = &failed.content[0].as_text().unwrap().text;
    assert_eq!(
        text,
        "\"names\" is required: an array of tool names such as [\"server.tool\"]\n\
         Warning: \"tools\" is not an argument of describe_tools; it was ignored. describe_tools takes \"names\", \"language\", \"schemas\"."
    );
    server.stop().await.unwrap();
}

/// A client that sends arguments `execute_code` does not read gets a warning for each of the
/// first five and one line counting the rest: an answer of a few kilobytes, not one that grows
/// with the request (docs/benchmarks.md, "Figures behind choices in the code", says how large
/// one naming every argument gets). Past 10,000 the request is refused before it is
/// decoded, naming the count, and the gateway goes on serving.
#[tokio::test]
async fn unknown_arguments_get_a_bounded_answer() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    let request = |count: usize| {
        let mut arguments = serde_json::Map::new();
        arguments.insert("code".to_owned(), json!("return 40 + 2"));
        for index in 0..count {
            arguments.insert(format!("k{index}"), json!(0));
        }
        Value::Object(arguments)
    };
    let executed = server.call("execute_code", request(9_999)).await.unwrap();
    let size = serde_json::to_vec(&executed).unwrap().len();
    assert!(size < 64 * 1024, "{size} bytes");
    assert_ne!(executed.is_error, Some(true), "{executed:?}");
    let text = &executed.content[0].as_text().unwrap().text;
    assert!(
        text.starts_with("42\nWarning: \"k0\" is not an argument of execute_code"),
        "{text}"
    );
    assert!(
        text.ends_with(
            "\nWarning: … and 9994 more arguments that execute_code does not read were ignored too."
        ),
        "{text}"
    );
    let structured = executed.structured_content.unwrap();
    assert_eq!(structured["warnings"].as_array().unwrap().len(), 6);

    let refused = server
        .call("execute_code", request(1_000_000))
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.len() < 1024, "{refused}");
    assert!(
        refused.contains(
            "\"params.arguments\" has 1000001 members, more than the 10000 toolweave reads in one request"
        ),
        "{refused}"
    );
    let after = server.execute("return 1 + 1", "javascript").await.unwrap();
    assert_eq!(after.value().unwrap(), &json!(2));
    server.stop().await.unwrap();
}

/// Raw lines on stdin: garbage and unknown methods get JSON-RPC errors and the server keeps
/// serving; nothing but protocol appears on stdout.
#[test]
fn raw_stdio_survives_bad_input() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let mut child = Command::new(toolweave())
        .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
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

/// `toolweave serve` over raw stdio: lines written as they are, answers read with a bound on
/// the wait, so that a request left unanswered fails the test instead of hanging it.
struct RawStdio {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    answers: std::sync::mpsc::Receiver<String>,
    log: Option<std::thread::JoinHandle<String>>,
}

impl RawStdio {
    fn start(config: &std::path::Path) -> Self {
        let mut child = Command::new(toolweave())
            .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
            .args(["serve", "--config"])
            .arg(config)
            .env("TOOLWEAVE_LOG", "warn")
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
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, answers) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                if sender.send(line.unwrap()).is_err() {
                    return;
                }
            }
        });
        let mut raw = Self {
            stdin: child.stdin.take(),
            child,
            answers,
            log: Some(log),
        };
        raw.send(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
        );
        assert_eq!(raw.answer()["id"], 1);
        raw.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        raw
    }

    fn send(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line on stdout, as JSON.
    fn answer(&self) -> Value {
        let line = self
            .answers
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no answer within 30 s"));
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout is not JSON-RPC: {line:?}: {e}"))
    }

    /// Closes stdin, waits for the exit, and returns stderr.
    fn finish(mut self) -> String {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
        self.log.take().unwrap().join().unwrap()
    }
}

/// Every request on stdio gets an answer addressed to its id, whatever is wrong with it: params
/// that are not an object, params that do not fit the method, a wrong `jsonrpc`, text cut short,
/// a line over the 16 MiB limit (its id read from its start or its end). A lone surrogate escape
/// is replaced, and the request served.
#[test]
fn raw_stdio_answers_every_request() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let mut raw = RawStdio::start(&config);
    for (line, expected) in [
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":[1,2]}"#,
            json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32602,
                "message": "the params of \"tools/call\" must be a JSON object, not an array"}}),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"three","method":"tools/call","params":"x"}"#,
            json!({"jsonrpc": "2.0", "id": "three", "error": {"code": -32602,
                "message": "the params of \"tools/call\" must be a JSON object, not a string"}}),
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"nam":"search_tools"}}"#,
            json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602,
                "message": "invalid params for \"tools/call\": missing field `name`; expected {\"name\": \"<tool>\", \"arguments\": {...}}"}}),
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"ping""#,
            json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32700,
                "message": "the message is not valid JSON: EOF while parsing an object at line 1 column 39"}}),
        ),
        (
            r#"{"jsonrpc":"1.0","id":6,"method":"ping"}"#,
            json!({"jsonrpc": "2.0", "id": 6, "error": {"code": -32600,
                "message": "\"jsonrpc\" must be \"2.0\""}}),
        ),
        (
            r#"{"jsonrpc":"2.0","id":[6],"method":"ping"}"#,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600,
                "message": "the \"id\" of a request must be a string or an integer, not an array"}}),
        ),
    ] {
        raw.send(line.as_bytes());
        assert_eq!(raw.answer(), expected, "{line}");
    }

    // A lone surrogate escape (what JSON.stringify writes for half an emoji) becomes U+FFFD.
    raw.send(
        br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"describe_tools","arguments":{"names":["fixture.add\ud83d"]}}}"#,
    );
    let described = raw.answer();
    assert_eq!(described["id"], 7, "{described}");
    assert_eq!(
        described["result"]["structuredContent"]["unknown"],
        json!([["fixture.add\u{fffd}", ["fixture.add"]]]),
        "{described}"
    );

    // Lines over 16 MiB: the id at the start, the id at the end (as the TypeScript SDK writes
    // it), no id at all.
    let code = "x".repeat(17 * 1024 * 1024);
    let head = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"execute_code","arguments":{{"code":"{code}"}}}}}}"#
    );
    let tail = format!(
        r#"{{"method":"tools/call","params":{{"name":"execute_code","arguments":{{"code":"{code}"}}}},"jsonrpc":"2.0","id":"nine"}}"#
    );
    let nameless = format!(r#"{{"method":"tools/call","params":{{"code":"{code}"}}}}"#);
    for (line, id) in [(&head, json!(8)), (&tail, json!("nine"))] {
        raw.send(line.as_bytes());
        assert_eq!(
            raw.answer(),
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": format!(
                "the message is {} bytes, over toolweave's limit of 16 MiB (16777216 bytes) for one message; it was not read. Send less in one request.",
                line.len()
            )}})
        );
    }
    raw.send(nameless.as_bytes());
    raw.send(br#"{"jsonrpc":"2.0","id":10,"method":"ping"}"#);
    assert_eq!(
        raw.answer(),
        json!({"jsonrpc": "2.0", "id": 10, "result": {}})
    );
    let log = raw.finish();
    assert!(
        log.contains(&format!(
            "stdin line 12 is {} bytes, over the limit of 16777216 bytes for one message, and was ignored (no request id could be read from it to answer)",
            nameless.len()
        )),
        "{log}"
    );
}

/// search_tools and describe_tools do bounded work: at most 50 different names of at most 512
/// bytes, a query of at most 1000 bytes, each past its bound a failed call that names it;
/// repeated names count once.
#[tokio::test]
async fn discovery_requests_are_bounded() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    let failed = |result: &rmcp::model::CallToolResult| -> String {
        assert_eq!(result.is_error, Some(true), "{result:?}");
        let structured = result.structured_content.as_ref().unwrap();
        assert_eq!(structured["error"]["kind"], "invalid_arguments");
        result.content[0].as_text().unwrap().text.clone()
    };
    let names: Vec<String> = (0..51).map(|i| format!("fixture.tool{i}")).collect();
    let too_many = server
        .call("describe_tools", json!({ "names": names }))
        .await
        .unwrap();
    assert_eq!(
        failed(&too_many),
        "describe at most 50 tools at once: this request names more than 50 different ones (51 names in all). Describe them 50 at a time, or name a server to describe all of its tools."
    );
    let long_name = format!("fixture.{}", "a".repeat(505));
    let too_long = server
        .call(
            "describe_tools",
            json!({ "names": ["fixture.add", long_name] }),
        )
        .await
        .unwrap();
    assert_eq!(
        failed(&too_long),
        "a tool name is at most 512 bytes, and name 2 of this request is 513 bytes (it begins \"fixture.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"). Name tools as \"server.tool\"."
    );
    let long_query = server
        .call("search_tools", json!({ "query": "add ".repeat(251) }))
        .await
        .unwrap();
    assert_eq!(
        failed(&long_query),
        "a search query is at most 1000 bytes, and this one is 1004. Search with a few words that say what the tool should do."
    );
    // Repeats count once, and a tool named two ways is described once.
    let mut repeated = vec!["fixture.add"; 20_000];
    repeated.push("mcp__fixture__add");
    let described = server
        .call("describe_tools", json!({ "names": repeated }))
        .await
        .unwrap();
    assert_ne!(described.is_error, Some(true), "{described:?}");
    let tools = &described.structured_content.unwrap()["tools"];
    assert_eq!(tools.as_array().unwrap().len(), 1, "{tools}");
    assert_eq!(tools[0]["name"], "fixture.add");
    // Within the bounds, both still answer.
    let found = server
        .call("search_tools", json!({ "query": "add ".repeat(250) }))
        .await
        .unwrap();
    assert_ne!(found.is_error, Some(true), "{found:?}");
    server.stop().await.unwrap();
}

/// A describe or search answer stays within --max-result-bytes: the tools that do not fit are
/// named (describe) or counted (search), and the text says how to get them.
#[tokio::test]
async fn discovery_answers_stay_within_the_result_limit() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &["--max-result-bytes", "2000"])
        .await
        .unwrap();
    let described = server
        .call("describe_tools", json!({ "names": ["fixture"] }))
        .await
        .unwrap();
    assert_ne!(described.is_error, Some(true), "{described:?}");
    let structured = described.structured_content.unwrap();
    let tools = structured["tools"].as_array().unwrap();
    let omitted = structured["omitted"].as_array().unwrap();
    assert!(!tools.is_empty() && !omitted.is_empty(), "{structured}");
    assert!(
        serde_json::to_string(tools).unwrap().len() <= 2000,
        "{structured}"
    );
    let text = &described.content[0].as_text().unwrap().text;
    assert!(
        text.contains(&format!(
            "{} more tools are not described: the answer is limited to the result size (--max-result-bytes). Describe them a few at a time: {}",
            omitted.len(),
            omitted[0].as_str().unwrap()
        )),
        "{text}"
    );
    // With schemas, which go into the text and into structuredContent, both together stay
    // within it.
    let with_schemas = server
        .call(
            "describe_tools",
            json!({ "names": ["fixture"], "schemas": true }),
        )
        .await
        .unwrap();
    let text_bytes = with_schemas.content[0].as_text().unwrap().text.len();
    let structured = with_schemas.structured_content.unwrap();
    let tools_bytes = serde_json::to_string(&structured["tools"]).unwrap().len();
    assert!(
        !structured["tools"].as_array().unwrap().is_empty(),
        "{structured}"
    );
    assert!(
        text_bytes + tools_bytes <= 2000 + 1200,
        "text {text_bytes} + tools {tools_bytes} bytes: {structured}"
    );
    // The tools left out are described when asked for alone.
    let alone = server
        .call("describe_tools", json!({ "names": [omitted[0]] }))
        .await
        .unwrap();
    assert_eq!(
        alone.structured_content.unwrap()["tools"][0]["name"],
        omitted[0]
    );

    let found = server
        .call("search_tools", json!({ "query": "", "limit": 50 }))
        .await
        .unwrap();
    let structured = found.structured_content.unwrap();
    let results = structured["results"].as_array().unwrap();
    let left_out = structured["omitted"].as_u64().unwrap();
    assert!(!results.is_empty() && left_out > 0, "{structured}");
    assert!(serde_json::to_string(results).unwrap().len() <= 2000);
    let text = &found.content[0].as_text().unwrap().text;
    assert!(
        text.contains(&format!("{left_out} more matching tools are left out: the answer is limited to the result size (--max-result-bytes).")),
        "{text}"
    );
    server.stop().await.unwrap();
}
