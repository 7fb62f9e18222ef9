//! What a client sends: every request over stdio and HTTP gets an answer that names what is
//! wrong, whatever is wrong with it, and discovery requests of any size are bounded; meanwhile
//! other executions go on unstalled and the gateway keeps answering.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolweave_testkit::harness::fixture_config;
use toolweave_testkit::http::raw_exchange;

use super::gateway::{ADDRESS_SPACE, Gateway, NEXT_ANSWER_BOUND};
use super::probe::STALL_BOUND;
use super::{serial, toolweave};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
/// How often the stdio probe sends an execution.
const PACE: Duration = Duration::from_millis(20);

/// `toolweave serve` over raw stdio under the address-space limit. Answers to the probe's
/// requests (ids `"probe-N"`) are timed apart; every other answer is the case's.
struct StdioGateway {
    child: Child,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    answers: Receiver<Value>,
    probe_answers: Arc<Mutex<Vec<(String, Instant)>>>,
    log: Option<std::thread::JoinHandle<String>>,
}

impl StdioGateway {
    fn start(config: &std::path::Path) -> Self {
        let mut child = Command::new("prlimit")
            .arg(format!("--as={ADDRESS_SPACE}"))
            .arg("--")
            .arg(toolweave())
            .args(["serve", "--isolation", "worker", "--config"])
            .arg(config)
            .env("TOOLWEAVE_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("prlimit (util-linux) runs the gateway under the address-space limit");
        let mut stderr = child.stderr.take().unwrap();
        let log = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, answers): (Sender<Value>, _) = channel();
        let probe_answers = Arc::new(Mutex::new(Vec::new()));
        let probed = probe_answers.clone();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { return };
                let answer: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout is not JSON-RPC: {line:?}: {e}"));
                if let Some(id) = answer["id"].as_str().filter(|id| id.starts_with("probe-")) {
                    probed.lock().unwrap().push((id.to_owned(), Instant::now()));
                } else if sender.send(answer).is_err() {
                    return;
                }
            }
        });
        let gateway = Self {
            stdin: Arc::new(Mutex::new(child.stdin.take())),
            child,
            answers,
            probe_answers,
            log: Some(log),
        };
        gateway.send(INITIALIZE.as_bytes());
        assert_eq!(gateway.answer()["id"], 1);
        gateway.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        gateway
    }

    fn send(&self, line: &[u8]) {
        let mut stdin = self.stdin.lock().unwrap();
        let stdin = stdin.as_mut().unwrap();
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next answer that is not the probe's.
    fn answer(&self) -> Value {
        self.answers
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no answer within 30 s"))
    }

    /// Sends `line` with the probe running and returns what the probe saw: the longest time a
    /// probe execution took, and how many were answered. `answered` is whether `line` gets an
    /// answer of its own (returned).
    fn send_probed(&self, line: &[u8], answered: bool) -> (Option<Value>, Duration, usize) {
        let stop = Arc::new(AtomicBool::new(false));
        let sent: Arc<Mutex<Vec<(String, Instant)>>> = Arc::new(Mutex::new(Vec::new()));
        let prober = {
            let stop = stop.clone();
            let sent = sent.clone();
            let stdin = self.stdin.clone();
            std::thread::spawn(move || {
                let mut number = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    number += 1;
                    let id = format!("probe-{number}");
                    let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                        "params": {"name": "execute_code", "arguments": {"code": "return 1"}}});
                    {
                        // The pipe is let go before the pause, for the case's own writes.
                        let mut guard = stdin.lock().unwrap();
                        let Some(pipe) = guard.as_mut() else { return };
                        // Timed from when the line is in the pipe: a probe that waited behind the
                        // case's own long write measures the gateway, not this writer.
                        let _ = writeln!(pipe, "{request}");
                        let _ = pipe.flush();
                        sent.lock().unwrap().push((id, Instant::now()));
                    }
                    std::thread::sleep(PACE);
                }
            })
        };
        std::thread::sleep(PACE * 2);
        self.send(line);
        let answer = answered.then(|| self.answer());
        std::thread::sleep(PACE * 2);
        stop.store(true, Ordering::SeqCst);
        prober.join().unwrap();
        // Every probe is answered, within the bound of the slowest one.
        let until = Instant::now() + Duration::from_secs(10);
        let sent = sent.lock().unwrap().clone();
        loop {
            let got = self.probe_answers.lock().unwrap().len();
            if got >= sent.len() || Instant::now() > until {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut received = std::mem::take(&mut *self.probe_answers.lock().unwrap());
        received.sort();
        let mut longest = Duration::ZERO;
        for (id, at) in &sent {
            let Some((_, answered_at)) = received.iter().find(|(other, _)| other == id) else {
                panic!("the probe execution {id} got no answer");
            };
            longest = longest.max(answered_at.saturating_duration_since(*at));
        }
        (answer, longest, sent.len())
    }

    /// Closes stdin, waits for the exit, and returns stderr.
    fn finish(mut self) -> String {
        drop(self.stdin.lock().unwrap().take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
        self.log.take().unwrap().join().unwrap()
    }
}

/// Every request on stdio gets an answer addressed to its id, whatever is wrong with it: params
/// that are not an object, params that do not fit the method, a wrong `jsonrpc`, text cut short,
/// a line over the 16 MiB limit (its id read from its start or its end). A lone surrogate escape
/// is replaced, and the request served. Executions sent meanwhile are not stalled.
#[test]
fn every_stdio_request_is_answered() {
    let _serial = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(serial());
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let gateway = StdioGateway::start(&config);
    let rest = {
        let (_, longest, _) =
            gateway.send_probed(br#"{"jsonrpc":"2.0","id":"rest","method":"ping"}"#, true);
        longest
    };
    let code = "x".repeat(17 * 1024 * 1024);
    let oversized = |line: &str| {
        json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": format!(
            "the message is {} bytes, over toolweave's limit of 16 MiB (16777216 bytes) for one message; it was not read. Send less in one request.",
            line.len()
        )}})
    };
    let head = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"execute_code","arguments":{{"code":"{code}"}}}}}}"#
    );
    let tail = format!(
        r#"{{"method":"tools/call","params":{{"name":"execute_code","arguments":{{"code":"{code}"}}}},"jsonrpc":"2.0","id":"nine"}}"#
    );
    let nameless = format!(r#"{{"method":"tools/call","params":{{"code":"{code}"}}}}"#);
    let with_id = |mut answer: Value, id: Value| {
        answer["id"] = id;
        answer
    };
    let cases: Vec<(String, Option<Value>)> = vec![
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":[1,2]}"#.into(),
            Some(json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32602,
                "message": "the params of \"tools/call\" must be a JSON object, not an array"}})),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"three","method":"tools/call","params":"x"}"#.into(),
            Some(json!({"jsonrpc": "2.0", "id": "three", "error": {"code": -32602,
                "message": "the params of \"tools/call\" must be a JSON object, not a string"}})),
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"nam":"search_tools"}}"#.into(),
            Some(json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602,
                "message": "invalid params for \"tools/call\": missing field `name`; expected {\"name\": \"<tool>\", \"arguments\": {...}}"}})),
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"ping""#.into(),
            Some(json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32700,
                "message": "the message is not valid JSON: EOF while parsing an object at line 1 column 39"}})),
        ),
        (
            r#"{"jsonrpc":"1.0","id":6,"method":"ping"}"#.into(),
            Some(json!({"jsonrpc": "2.0", "id": 6, "error": {"code": -32600,
                "message": "\"jsonrpc\" must be \"2.0\""}})),
        ),
        (
            r#"{"jsonrpc":"2.0","id":[6],"method":"ping"}"#.into(),
            Some(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600,
                "message": "the \"id\" of a request must be a string or an integer, not an array"}})),
        ),
        (
            // A lone surrogate escape (what JSON.stringify writes for half an emoji) becomes
            // U+FFFD, and the request is served.
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"describe_tools","arguments":{"names":["fixture.add\ud83d"]}}}"#.into(),
            None,
        ),
        (head.clone(), Some(with_id(oversized(&head), json!(8)))),
        (tail.clone(), Some(with_id(oversized(&tail), json!("nine")))),
        // No id to answer: nothing comes back (the next case's answer shows it was skipped).
        (nameless.clone(), None),
        (
            // 20,000 names, repeated: described once, within the result budget.
            json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "describe_tools",
                "arguments": {"names": vec!["fixture.add"; 20_000]}}}).to_string(),
            None,
        ),
        (r#"{"jsonrpc":"2.0","id":12,"method":"ping"}"#.into(), Some(json!({"jsonrpc": "2.0", "id": 12, "result": {}}))),
    ];
    let mut failures = Vec::new();
    for (line, expected) in &cases {
        let is_answered =
            expected.is_some() || line.contains("\"id\":7") || line.contains("\"id\":11");
        let (answer, longest, probed) = gateway.send_probed(line.as_bytes(), is_answered);
        let label: String = line.chars().take(80).collect();
        match (expected, &answer) {
            (Some(expected), Some(answer)) if answer != expected => {
                failures.push(format!("{label}: answered {answer}, expected {expected}"));
            }
            (None, Some(answer))
                if answer["id"] == 7
                    && answer["result"]["structuredContent"]["unknown"]
                        != json!([["fixture.add\u{fffd}", ["fixture.add"]]]) =>
            {
                failures.push(format!("{label}: answered {answer}"));
            }
            (None, Some(answer)) if answer["id"] == 7 => {}
            (None, Some(answer)) if answer["id"] == 11 => {
                let described = &answer["result"]["structuredContent"]["tools"];
                if described.as_array().map(Vec::len) != Some(1) {
                    failures.push(format!("{label}: answered {answer}"));
                }
            }
            _ => {}
        }
        if longest > rest + STALL_BOUND {
            failures.push(format!(
                "{label}: another execution took {longest:?} meanwhile ({rest:?} at rest, {probed} probed)"
            ));
        }
    }
    let started = Instant::now();
    gateway.send(br#"{"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"name":"execute_code","arguments":{"code":"return 'still serving'"}}}"#);
    let last = gateway.answer();
    assert_eq!(
        last["result"]["structuredContent"]["result"], "still serving",
        "{last}"
    );
    assert!(started.elapsed() < NEXT_ANSWER_BOUND);
    let log = gateway.finish();
    assert!(
        log.contains(&format!(
            "is {} bytes, over the limit of 16777216 bytes for one message, and was ignored (no request id could be read from it to answer)",
            nameless.len()
        )),
        "{log}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Over HTTP: a `DELETE` of a session that does not exist gets 404, a body framed two ways 400,
/// one over 8 MiB 413, and discovery from the MCP client of any size a bounded answer; another
/// client's executions go on meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_http_request_is_answered() {
    let _serial = serial().await;
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let mut gateway = Gateway::start(&config, "worker", &[]).await;
    let url = gateway.http.url();
    let address = gateway.http.address();
    let client = toolweave_testkit::http::client();
    let mut failures = Vec::new();

    let probe = gateway.probe();
    let deleted = client
        .delete(&url)
        .header("mcp-session-id", "no-such-session")
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    if deleted.status().as_u16() != 404 {
        failures.push(format!(
            "DELETE of an unknown session: {}",
            deleted.status()
        ));
    }
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nTransfer-Encoding: chunked\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    let (status, text) = raw_exchange(address, &request).await.unwrap();
    if status != 400 || !text.contains("Frame it one way") {
        failures.push(format!("Content-Length with chunked: {status} {text}"));
    }
    let oversized = client
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(vec![b' '; 9 * 1024 * 1024])
        .send()
        .await
        .unwrap();
    if oversized.status().as_u16() != 413 {
        failures.push(format!("a 9 MiB body: {}", oversized.status()));
    }
    failures.extend(probe.finish().await.problems(gateway.rest));

    // Discovery from the MCP client: 20,000 different names are refused naming the bound; the
    // same name 20,000 times is described once.
    let different: Vec<String> = (0..20_000).map(|i| format!("demo{i}")).collect();
    let (called, probed) = gateway
        .call_probed("describe_tools", json!({ "names": different }))
        .await;
    match called {
        Ok(result) if result.is_error == Some(true) => {
            let text = format!("{:?}", result.content);
            if !text.contains("describe at most 50 tools at once") {
                failures.push(format!("20,000 names: {text}"));
            }
        }
        other => failures.push(format!("20,000 names: {other:?}")),
    }
    failures.extend(probed.problems(gateway.rest));
    let (called, probed) = gateway
        .call_probed(
            "describe_tools",
            json!({ "names": vec!["fixture.add"; 20_000] }),
        )
        .await;
    match called {
        Ok(result) if result.is_error != Some(true) => {
            let tools = &result.structured_content.unwrap_or_default()["tools"];
            if tools.as_array().map(Vec::len) != Some(1) {
                failures.push(format!("20,000 repeats: {tools}"));
            }
        }
        other => failures.push(format!("20,000 repeats: {other:?}")),
    }
    failures.extend(probed.problems(gateway.rest));
    failures.extend(gateway.serving_problems("javascript").await);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
