//! Approval without elicitation: a call in the ask tier from a client that has no form waits
//! while toolweave serves a one-time approval page on loopback; the page's address reaches the
//! client as a `toolweave/approval` log notification and is listed for `toolweave approve`.
//! A real headless Chromium answers the page; plain HTTP checks what the page refuses. And the
//! matching scope: one answer approves the later calls whose arguments match.

#![allow(deprecated)] // MCP logging (`notifications/message`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, LoggingMessageNotificationParam};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};
use toolweave_testkit::harness::{Execution, fixture_config, serve_with};

use super::{ApprovingClient, repo_root, toolweave};

/// Calls `fixture.remove` (destructive: it asks) and answers what became of the call.
fn remove(name: &str) -> String {
    format!(
        "try {{ return await tools.fixture.remove({{ name: {name:?} }}) }} catch (e) {{ return String(e) }}"
    )
}

/// A client without elicitation that keeps toolweave's approval notifications.
#[derive(Clone, Default)]
struct Watching {
    approvals: Arc<Mutex<Vec<Value>>>,
}

impl ClientHandler for Watching {
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if params.logger.as_deref() == Some("toolweave/approval") {
            self.approvals.lock().unwrap().push(params.data);
        }
    }
}

/// A gateway over the fixture server for a client without elicitation, listing waiting calls
/// under its own runtime folder, with an audit log.
struct Gateway {
    dir: tempfile::TempDir,
    client: RunningService<RoleClient, Watching>,
    watching: Watching,
}

impl Gateway {
    async fn start(flags: &[&str]) -> Self {
        let (dir, config) = fixture_config(&["fixture"]).unwrap();
        let runtime = dir.path().join("run");
        std::fs::create_dir(&runtime).unwrap();
        let log = dir.path().join("audit.jsonl");
        let mut all = vec![
            "--timeout-ms",
            "60000",
            "--audit-log",
            log.to_str().unwrap(),
        ];
        all.extend(flags);
        let watching = Watching::default();
        let (client, _) = serve_with(
            toolweave(),
            &config,
            &all,
            &[("XDG_RUNTIME_DIR", runtime.to_str().unwrap())],
            watching.clone(),
        )
        .await
        .unwrap();
        Self {
            dir,
            client,
            watching,
        }
    }

    fn runtime(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    /// Starts an execution of `code`; its answer, when it comes.
    fn execute(&self, code: &str) -> tokio::task::JoinHandle<CallToolResult> {
        self.execute_with(json!({ "code": code, "language": "javascript" }))
    }

    /// Starts an execution with `arguments`; its answer, when it comes. A call waiting at the
    /// page makes the execution answer early, saying where; its `resume` waits for the rest.
    fn execute_with(&self, arguments: Value) -> tokio::task::JoinHandle<CallToolResult> {
        let peer = self.client.peer().clone();
        let Value::Object(arguments) = arguments else {
            panic!("arguments must be an object: {arguments}");
        };
        tokio::spawn(async move {
            let mut answer = peer
                .call_tool(CallToolRequestParams::new("execute_code").with_arguments(arguments))
                .await
                .unwrap();
            while let Some(waiting) = answer
                .structured_content
                .as_ref()
                .and_then(|structured| structured.get("waiting"))
                .cloned()
            {
                let text = Execution::from_result(answer.clone()).unwrap().text;
                let url = waiting["approvals"][0]["url"].as_str().unwrap();
                assert!(text.contains(url), "{text}");
                let Value::Object(resume) = json!({ "code": "", "resume": waiting["resume"] })
                else {
                    unreachable!("a literal object");
                };
                answer = peer
                    .call_tool(CallToolRequestParams::new("execute_code").with_arguments(resume))
                    .await
                    .unwrap();
            }
            answer
        })
    }

    /// The `n`th approval notification (from 0), waiting for it.
    async fn approval(&self, n: usize) -> Value {
        for _ in 0..400 {
            if let Some(data) = self.watching.approvals.lock().unwrap().get(n) {
                return data.clone();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no approval notification number {n} came");
    }

    /// Stops the gateway; the audit log's tool calls, one execution after another.
    async fn stop(self) -> Vec<Value> {
        self.client.cancel().await.unwrap();
        let text = std::fs::read_to_string(self.dir.path().join("audit.jsonl")).unwrap();
        text.lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .flat_map(|line| line["toolCalls"].as_array().cloned().unwrap_or_default())
            .collect()
    }
}

/// The value an execution's answer carries.
async fn value(answer: tokio::task::JoinHandle<CallToolResult>) -> Value {
    let answer = tokio::time::timeout(Duration::from_secs(60), answer)
        .await
        .unwrap_or_else(|_| panic!("the execution did not end within 60 s"))
        .unwrap();
    Execution::from_result(answer)
        .unwrap()
        .value()
        .unwrap()
        .clone()
}

/// Chromium from the distribution, if installed.
fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.exists())
}

/// Opens `url` in headless Chromium, picks `scope` (if any) and clicks `button`; the page's
/// text before and after.
fn answer_in_browser(
    chromium: &Path,
    url: &str,
    button: &str,
    scope: Option<&str>,
) -> (String, String) {
    let mut command = std::process::Command::new("python3");
    command
        .arg(repo_root().join("tests/python/browser_answer.py"))
        .arg(chromium)
        .arg(url)
        .arg(button)
        .args(scope);
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "the browser failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut before = String::new();
    let mut after = String::new();
    for line in String::from_utf8(output.stdout).unwrap().lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        if let Some(text) = line["before"].as_str() {
            before = text.to_owned();
        }
        if let Some(text) = line["after"].as_str() {
            after = text.to_owned();
        }
    }
    (before, after)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_approves_and_denies_at_the_approval_page() {
    let Some(chromium) = chromium() else {
        toolweave_testkit::skip::missing_prerequisite(
            "a_browser_approves_and_denies_at_the_approval_page",
            "Chromium is not installed (apt-get install chromium)",
        );
        return;
    };
    let gateway = Gateway::start(&[]).await;
    let answer = gateway.execute(&remove("draft-42"));
    let notice = gateway.approval(0).await;
    let url = notice["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{notice}");
    assert_eq!(notice["tool"], "fixture.remove");

    // The call is listed for `toolweave approve`, readable by its owner alone.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let listed = gateway.runtime().join("toolweave/approvals");
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&listed), 0o700);
        let file = listed.join(format!("{}.json", notice["id"].as_str().unwrap()));
        assert_eq!(mode(&file), 0o600);
    }

    let (before, after) = answer_in_browser(&chromium, &url, "approve", None);
    assert!(before.contains("fixture.remove"), "{before}");
    assert!(before.contains("\"draft-42\""), "{before}");
    assert!(
        before.contains("its server marks it destructive"),
        "{before}"
    );
    assert!(before.contains("SHA-256"), "{before}");
    assert!(after.contains("Approved"), "{after}");
    assert_eq!(value(answer).await, json!("removed draft-42"));
    assert!(
        !gateway
            .runtime()
            .join("toolweave/approvals")
            .read_dir()
            .unwrap()
            .any(|_| true),
        "an answered call is no longer listed"
    );

    // Deny: the call fails with the refusal, and the execution goes on with it.
    let answer = gateway.execute(&remove("keep-7"));
    let url = gateway.approval(1).await["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, after) = answer_in_browser(&chromium, &url, "deny", None);
    assert!(after.contains("Denied"), "{after}");
    let refused = value(answer).await;
    assert!(
        refused
            .as_str()
            .unwrap()
            .contains("fixture.remove was not called: its server marks it destructive, and the person asked declined this call"),
        "{refused}"
    );

    let calls = gateway.stop().await;
    assert_eq!(calls[0]["approval"], "approved", "{calls:?}");
    assert_eq!(calls[0]["approvalVia"], "page");
    assert_eq!(calls[0]["approvalScope"], "call");
    assert_eq!(calls[1]["approval"], "declined");
    assert_eq!(calls[1]["approvalVia"], "page");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_refuses_a_wrong_token_another_origin_and_a_second_answer() {
    let gateway = Gateway::start(&[]).await;
    let answer = gateway.execute(&remove("x"));
    let url = gateway.approval(0).await["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let (page, token) = url.rsplit_once('/').unwrap();
    let origin = url.split("/approval/").next().unwrap().to_owned();
    let http = toolweave_testkit::http::client();
    let form = |token: &str, answer: &str| format!("token={token}&answer={answer}&scope=call");
    let post = async |address: &str, body: String, from: Option<&str>| {
        let mut request = http
            .post(address)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        if let Some(from) = from {
            request = request.header("origin", from);
        }
        if from == Some("null") {
            request = request.header("sec-fetch-site", "cross-site");
        }
        request.send().await.unwrap().status().as_u16()
    };
    let wrong = format!("{page}/{}", "0".repeat(64));

    let shown = http.get(&url).send().await.unwrap();
    assert_eq!(shown.status().as_u16(), 200);
    let headers = shown.headers();
    assert_eq!(
        headers["content-security-policy"].to_str().unwrap(),
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"
    );
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(
        http.get(&wrong).send().await.unwrap().status().as_u16(),
        404
    );
    // A wrong token in the address, or in the body, answers nothing.
    assert_eq!(
        post(&wrong, form(&"0".repeat(64), "approve"), None).await,
        404
    );
    assert_eq!(
        post(&url, form(&"0".repeat(64), "approve"), None).await,
        404
    );
    // Another site's page cannot answer, even knowing the token.
    assert_eq!(
        post(&url, form(token, "approve"), Some("http://evil.example")).await,
        403
    );
    assert_eq!(
        post(&url, form(token, "approve"), Some("http://localhost:1")).await,
        403
    );
    // Nor a sandboxed or local-file page, whose origin is opaque.
    assert_eq!(post(&url, form(token, "approve"), Some("null")).await, 403);
    // The page's own origin answers, once.
    assert_eq!(post(&url, form(token, "approve"), Some(&origin)).await, 200);
    assert_eq!(post(&url, form(token, "deny"), Some(&origin)).await, 404);
    assert_eq!(http.get(&url).send().await.unwrap().status().as_u16(), 404);
    assert_eq!(value(answer).await, json!("removed x"));
    gateway.stop().await;
}

/// Runs `toolweave approve ARGS` with the gateway's runtime folder; its output.
fn approve_command(runtime: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(toolweave())
        .arg("approve")
        .args(args)
        .env("XDG_RUNTIME_DIR", runtime)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolweave_approve_lists_a_waiting_call_and_answers_it() {
    let gateway = Gateway::start(&[]).await;
    let runtime = gateway.runtime();
    let empty = approve_command(&runtime, &[]);
    assert!(empty.status.success());
    assert_eq!(
        String::from_utf8_lossy(&empty.stdout),
        "No call waits for approval.\n"
    );

    let answer = gateway.execute(&remove("from-terminal"));
    let id = gateway.approval(0).await["id"].as_str().unwrap().to_owned();
    let listed = approve_command(&runtime, &[]);
    let listed = String::from_utf8(listed.stdout).unwrap();
    assert!(
        listed.starts_with(&format!(
            "{id}  fixture.remove  (its server marks it destructive)"
        )),
        "{listed}"
    );
    assert!(listed.contains("\"name\": \"from-terminal\""), "{listed}");
    assert!(listed.contains("--scope execution"), "{listed}");

    let wrong = approve_command(&runtime, &["nope", "--yes"]);
    assert!(!wrong.status.success());
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("no call waits for approval with id nope"),
        "{}",
        String::from_utf8_lossy(&wrong.stderr)
    );
    let approved = approve_command(&runtime, &[&id, "--yes", "--scope", "execution"]);
    assert!(
        approved.status.success(),
        "{}",
        String::from_utf8_lossy(&approved.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&approved.stdout),
        format!("Approved fixture.remove ({id}).\n")
    );
    assert_eq!(value(answer).await, json!("removed from-terminal"));
    let calls = gateway.stop().await;
    assert_eq!(calls[0]["approvalVia"], "terminal", "{calls:?}");
    assert_eq!(calls[0]["approvalScope"], "execution");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_nobody_answers_fails_naming_the_flag() {
    let gateway = Gateway::start(&["--approval-timeout-ms", "1000"]).await;
    let answer = gateway.execute(&format!(
        "const first = await (async () => {{ {} }})(); return [first, 'went on'];",
        remove("late")
    ));
    let result = value(answer).await;
    let refused = result[0].as_str().unwrap();
    assert!(
        refused.starts_with("Error: fixture.remove was not called: its server marks it destructive, and no one answered at toolweave's approval page (http://127.0.0.1:"),
        "{refused}"
    );
    assert!(
        refused.ends_with(
            "within 1000 ms (--approval-timeout-ms, or \"approvalTimeoutMs\" in the settings file)"
        ),
        "{refused}"
    );
    assert_eq!(result[1], "went on");
    assert!(
        !gateway
            .runtime()
            .join("toolweave/approvals")
            .read_dir()
            .unwrap()
            .any(|_| true),
        "a call that stopped waiting is no longer listed"
    );
    let calls = gateway.stop().await;
    assert_eq!(calls[0]["approval"], "unanswered", "{calls:?}");
    assert_eq!(calls[0]["outcome"], "denied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_execution_that_runs_out_of_time_while_a_call_waits_says_so() {
    let gateway = Gateway::start(&[]).await;
    let answer = gateway.execute_with(json!({
        "code": remove("slow"),
        "language": "javascript",
        "timeoutMs": 1500,
    }));
    let answer = tokio::time::timeout(Duration::from_secs(60), answer)
        .await
        .expect("the execution ended at its deadline")
        .unwrap();
    let execution = Execution::from_result(answer).unwrap();
    assert_eq!(
        execution.error_kind(),
        Some("Timeout"),
        "{}",
        execution.text
    );
    assert!(
        execution.text.contains(
            "Timeout: the execution ran longer than 1500 ms (the time its timeoutMs asked for) while a call of fixture.remove waited for the person's approval."
        ),
        "{}",
        execution.text
    );
    assert!(
        execution
            .text
            .contains("ask for more time with timeoutMs (up to the gateway's --timeout-ms)"),
        "{}",
        execution.text
    );
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_matching_approval_covers_later_calls_with_the_same_argument() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let log = dir.path().join("audit.jsonl");
    let approving = ApprovingClient::approving_for("matching:name");
    let (client, _) = serve_with(
        toolweave(),
        &config,
        &["--audit-log", log.to_str().unwrap()],
        &[],
        approving.clone(),
    )
    .await
    .unwrap();
    let execute = async |code: &str| -> Value {
        let Value::Object(arguments) = json!({ "code": code, "language": "javascript" }) else {
            unreachable!("a literal object");
        };
        let result = client
            .call_tool(CallToolRequestParams::new("execute_code").with_arguments(arguments))
            .await
            .unwrap();
        Execution::from_result(result)
            .unwrap()
            .value()
            .unwrap()
            .clone()
    };
    let looped = execute(
        "const out = []; for (let i = 0; i < 4; i++) out.push(await tools.fixture.remove({ name: 'tmp' })); return out;",
    )
    .await;
    assert_eq!(
        looped,
        json!(["removed tmp", "removed tmp", "removed tmp", "removed tmp"])
    );
    assert_eq!(approving.asked().len(), 1, "asked once for the loop");
    let offered: Vec<String> = approving.offered()[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|scope| scope["const"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        offered,
        ["call", "execution", "matching:name", "matching", "session"]
    );
    // The approval lasts for the session, for the same value only.
    assert_eq!(
        execute("return await tools.fixture.remove({ name: 'tmp' })").await,
        json!("removed tmp")
    );
    assert_eq!(approving.asked().len(), 1);
    assert_eq!(
        execute("return await tools.fixture.remove({ name: 'other' })").await,
        json!("removed other")
    );
    let asked = approving.asked();
    assert_eq!(asked.len(), 2, "another value asks again: {asked:?}");
    assert!(asked[1].contains("\"other\""), "{}", asked[1]);
    client.cancel().await.unwrap();

    let text = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .flat_map(|line| line["toolCalls"].as_array().cloned().unwrap_or_default())
        .collect();
    assert_eq!(calls.len(), 6, "{text}");
    assert_eq!(calls[0]["approval"], "approved");
    assert_eq!(calls[0]["approvalScope"], "matching");
    assert_eq!(calls[0]["approvalMatching"], json!(["name"]));
    assert_eq!(calls[0]["approvalVia"], "elicitation");
    for call in &calls[1..5] {
        assert_eq!(call["approval"], "approved-before", "{call}");
        assert_eq!(call["approvalScope"], "matching");
    }
    assert_eq!(calls[5]["approval"], "approved");
}
