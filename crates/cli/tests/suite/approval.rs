//! Tools their servers mark destructive: called only when an approve rule matches them or the
//! person at the client approves the call (MCP elicitation); a client that cannot be asked gets
//! a refusal that names the approve rule admitting just that tool. Allow and deny decide which
//! tools exist, and pre-approve nothing.

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use toolweave_testkit::harness::{Execution, Toolweave, fixture_config, serve_with};

use super::{ApprovingClient, toolweave};

const REMOVE: &str =
    "try { return await tools.fixture.remove({ name: NAME }) } catch (e) { return String(e) }";

fn remove(name: &str) -> String {
    REMOVE.replace("NAME", &format!("{name:?}"))
}

/// What `tools.fixture.remove` answers in a gateway started with `flags`, and whether
/// `tools.fixture.add` can still be called there.
async fn remove_with(config: &std::path::Path, flags: &[&str]) -> (String, bool) {
    let flags: Vec<&str> = ["--approval", "elicitation"]
        .iter()
        .chain(flags)
        .copied()
        .collect();
    let server = Toolweave::start(toolweave(), config, &flags).await.unwrap();
    let removed = server.execute(&remove("x"), "javascript").await.unwrap();
    let removed = removed.value().unwrap().as_str().unwrap().to_owned();
    let added = server
        .execute(
            "try { return await tools.fixture.add({ a: 1, b: 2 }) } catch (e) { return String(e) }",
            "javascript",
        )
        .await
        .unwrap();
    let add_works = added.value().unwrap() == &json!("3");
    server.stop().await.unwrap();
    (removed, add_works)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_cannot_be_asked_gets_a_refusal_naming_the_approve_rule() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let (refused, add_works) = remove_with(&config, &[]).await;
    assert_eq!(
        refused,
        "Error: fixture.remove was not called: its server marks it destructive, so each call needs \
         approval, and this MCP client cannot be asked (it does not support form elicitation, and \
         --approval elicitation keeps toolweave's approval page off). Neither \
         code nor the model can change this: the person running toolweave can pre-approve this one tool by \
         starting it with --approve fixture.remove (or adding \"fixture.remove\" to \"approve\" in \
         its settings file)"
    );
    // Tools not marked destructive need no approval.
    assert!(add_works);

    // The advice works, and admits that one tool without shutting out the others.
    let (approved, add_works) = remove_with(&config, &["--approve", "fixture.remove"]).await;
    assert_eq!(approved, "removed x");
    assert!(add_works, "--approve made an allowlist of one tool");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_rules_pre_approve_nothing_and_approve_rules_let_nothing_in() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    // However wide, an allow rule decides only which tools exist.
    for allow in ["fixture.*", "*.*", "*", "fixture.remove"] {
        let (refused, _) = remove_with(&config, &["--allow", allow]).await;
        assert!(
            refused.contains("marks it destructive")
                && refused.contains("--approve fixture.remove"),
            "--allow {allow}: {refused}"
        );
    }
    // An approve rule never brings back a tool that deny or allow keeps out.
    let (denied, _) = remove_with(
        &config,
        &["--approve", "fixture.*", "--deny", "fixture.remove"],
    )
    .await;
    assert!(
        denied.contains("fixture.remove may not be called")
            && denied.contains("the deny rule \"fixture.remove\" matches it"),
        "{denied}"
    );
    let (unallowed, add_works) = remove_with(
        &config,
        &["--allow", "fixture.add", "--approve", "fixture.remove"],
    )
    .await;
    assert!(
        unallowed.contains("fixture.remove may not be called")
            && unallowed.contains("no allow rule matches it"),
        "{unallowed}"
    );
    assert!(add_works);
    // Globs approve every destructive tool they match; `*` is every tool.
    for approve in ["fixture.*", "*"] {
        let (approved, _) = remove_with(&config, &["--approve", approve]).await;
        assert_eq!(approved, "removed x", "--approve {approve}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settings_file_approves_and_a_rule_without_a_dot_is_refused_with_examples() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(&settings, r#"{"approve": ["fixture.remove"]}"#).unwrap();
    let (approved, _) = remove_with(&config, &["--settings", settings.to_str().unwrap()]).await;
    assert_eq!(approved, "removed x");

    for (flag, rule) in [("--allow", "fixture"), ("--approve", "remove")] {
        let output = std::process::Command::new(toolweave())
            .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
            .args(["types", "--config"])
            .arg(&config)
            .args([flag, rule])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let kind = flag.trim_start_matches("--");
        assert_eq!(
            stderr.trim(),
            format!(
                "toolweave: {kind} rule \"{rule}\": a rule names server.tool or mcp__server__tool, such as \"{rule}.*\" for every tool of a server \"{rule}\" or \"*.{rule}\" for a tool \"{rule}\" of any server (\"*\" alone is every tool)"
            )
        );
    }
    // `*` alone is every tool.
    let output = std::process::Command::new(toolweave())
        .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
        .args(["types", "--config"])
        .arg(&config)
        .args(["--allow", "*"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("remove("));
}

/// Approves only the calls on items named `ok-…`.
fn approves_ok_items(question: &str) -> bool {
    question.contains("\"ok-")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_supports_elicitation_is_asked_for_each_call() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let approving = ApprovingClient::approving_if(approves_ok_items);
    let (client, _) = serve_with(toolweave(), &config, &[], &[], approving.clone())
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
    assert_eq!(execute(&remove("ok-1")).await, json!("removed ok-1"));
    let declined = execute(&remove("keep-2")).await;
    let declined = declined.as_str().unwrap();
    assert!(declined.contains("declined this call"), "{declined}");
    let asked = approving.asked();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].contains("fixture.remove"), "{}", asked[0]);
    assert!(
        asked[0].contains("\"ok-1\""),
        "the arguments are shown: {}",
        asked[0]
    );
    client.cancel().await.unwrap();

    // A pre-approved tool is called without asking, and the audit log says why.
    let approving = ApprovingClient::approving_if(approves_ok_items);
    let log = dir.path().join("audit.jsonl");
    let flags = [
        "--approve",
        "fixture.remove",
        "--audit-log",
        log.to_str().unwrap(),
    ];
    let (client, _) = serve_with(toolweave(), &config, &flags, &[], approving.clone())
        .await
        .unwrap();
    let Value::Object(arguments) = json!({ "code": remove("keep-3"), "language": "javascript" })
    else {
        unreachable!("a literal object");
    };
    let result = client
        .call_tool(CallToolRequestParams::new("execute_code").with_arguments(arguments))
        .await
        .unwrap();
    let value = Execution::from_result(result)
        .unwrap()
        .value()
        .unwrap()
        .clone();
    assert_eq!(value, json!("removed keep-3"));
    assert!(approving.asked().is_empty());
    client.cancel().await.unwrap();
    let record: Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        record["toolCalls"][0]["approval"], "pre-approved",
        "{record}"
    );
    assert_eq!(record["toolCalls"][0]["outcome"], "ok", "{record}");
}

/// Twenty calls of `fixture.remove` in a loop, one after the other.
const TWENTY_REMOVES: &str = "const done = []; for (let i = 0; i < 20; i++) { done.push(await tools.fixture.remove({ name: `n${i}` })) } return done.length";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loop_of_twenty_writes_approved_for_the_execution_asks_once() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let log = dir.path().join("audit.jsonl");
    let approving = ApprovingClient::approving_for("execution");
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
    assert_eq!(execute(TWENTY_REMOVES).await, json!(20));
    let asked = approving.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0].contains("fixture.remove (its server marks it destructive)"),
        "{}",
        asked[0]
    );
    // The approval ends with its execution: the next one asks again.
    assert_eq!(execute(&remove("again")).await, json!("removed again"));
    assert_eq!(approving.asked().len(), 2);
    client.cancel().await.unwrap();

    let text = std::fs::read_to_string(&log).unwrap();
    let record: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let calls = record["toolCalls"].as_array().unwrap();
    assert_eq!(calls.len(), 20, "{record}");
    assert_eq!(calls[0]["approval"], "approved", "{record}");
    assert_eq!(calls[0]["approvalScope"], "execution", "{record}");
    for call in &calls[1..] {
        assert_eq!(call["approval"], "approved-before", "{record}");
        assert_eq!(call["approvalScope"], "execution", "{record}");
        assert_eq!(call["outcome"], "ok", "{record}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_for_the_session_covers_later_executions_and_calls_at_once_ask_once() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let approving = ApprovingClient::approving_for("session");
    let (client, _) = serve_with(toolweave(), &config, &[], &[], approving.clone())
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
    // Ten calls at once wait for the one question.
    let parallel = "const names = Array.from({ length: 10 }, (_, i) => `p${i}`); return (await Promise.all(names.map((name) => tools.fixture.remove({ name })))).length";
    assert_eq!(execute(parallel).await, json!(10));
    assert_eq!(execute(&remove("later")).await, json!("removed later"));
    let asked = approving.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    client.cancel().await.unwrap();
}
