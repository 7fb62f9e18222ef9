//! The audit log: one JSON line per execution with what was promised, and no argument or result
//! contents unless asked for.

use serde_json::{Value, json};
use toolweave_testkit::harness::{Toolweave, fixture_config};

use super::toolweave;

const PRIVATE: &str = "private-text-7f3a";

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_execution_is_one_line_without_contents() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let log = dir.path().join("audit.jsonl");
    let server = Toolweave::start(
        toolweave(),
        &config,
        &[
            "--audit-log",
            log.to_str().unwrap(),
            "--approval",
            "elicitation",
            "--deny",
            "fixture.crash",
            "--timeout-ms",
            "500",
        ],
    )
    .await
    .unwrap();
    let code = format!(
        "const e = await tools.fixture.echo({{ message: \"{PRIVATE}\" }}); \
         let refused = ''; try {{ await tools.fixture.crash({{}}) }} catch (err) {{ refused = String(err) }} \
         await tools.fixture.get_sum({{ a: 1, b: 2 }}); await callMCPTool('mcp__fixture__get-sum', {{ a: 1, b: 2 }}); \
         return [e.length, refused.includes('may not be called')]"
    );
    let first = server.execute(&code, "typescript").await.unwrap();
    assert_eq!(first.value().unwrap(), &json!([PRIVATE.len(), true]));
    let looped = server
        .execute("while (true) {}", "javascript")
        .await
        .unwrap();
    assert_eq!(looped.error_kind(), Some("Timeout"), "{}", looped.text);
    let python = server.execute("1 + 1", "python").await.unwrap();
    assert_eq!(python.value().unwrap(), &json!(2));
    // A destructive tool, and a client that cannot be asked to approve it.
    let unapproved = server
        .execute(
            "try { await tools.fixture.remove({ name: 'x' }); return 'called' } catch (e) { return 'refused' }",
            "javascript",
        )
        .await
        .unwrap();
    assert_eq!(unapproved.value().unwrap(), &json!("refused"));
    server.stop().await.unwrap();

    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains(PRIVATE),
        "arguments reached the audit log: {text}"
    );
    let records = lines(&log);
    assert_eq!(records.len(), 4, "{text}");
    let first = &records[0];
    for key in ["time", "session", "codeSha256", "durationMs"] {
        assert!(!first[key].is_null(), "{key} missing: {first}");
    }
    assert_eq!(first["language"], "typescript");
    assert_eq!(first["codeBytes"], code.len());
    assert_eq!(first["outcome"], "ok");
    assert_eq!(first["deniedCalls"], 1);
    let calls = first["toolCalls"].as_array().unwrap();
    assert_eq!(calls.len(), 4, "{first}");
    assert_eq!(calls[0]["name"], "fixture.echo");
    assert_eq!(calls[0]["tool"], "fixture.echo");
    // One tool, called by two of its names: both calls are found under the server's name.
    assert_eq!(calls[2]["name"], "fixture.get_sum");
    assert_eq!(calls[3]["name"], "mcp__fixture__get-sum");
    for call in &calls[2..] {
        assert_eq!(call["tool"], "fixture.get-sum", "{call}");
        assert_eq!(call["outcome"], "ok", "{call}");
    }
    assert_eq!(calls[0]["outcome"], "ok");
    assert_eq!(
        calls[0]["argumentBytes"],
        json!({ "message": PRIVATE }).to_string().len()
    );
    assert!(calls[0]["resultBytes"].as_u64().unwrap() > 0);
    assert!(calls[0].get("arguments").is_none());
    assert_eq!(calls[1]["name"], "fixture.crash");
    assert_eq!(
        calls[1]["tool"], "fixture.crash",
        "a tool kept out is named too"
    );
    assert_eq!(calls[1]["outcome"], "denied");
    assert_eq!(records[1]["outcome"], "error");
    assert_eq!(records[1]["error"], "Timeout");
    assert_eq!(records[2]["language"], "python");
    assert_eq!(records[2]["outcome"], "ok");
    let refused = &records[3]["toolCalls"][0];
    assert_eq!(refused["name"], "fixture.remove");
    assert_eq!(refused["outcome"], "denied");
    assert_eq!(refused["approval"], "unavailable");
    assert!(
        calls[0].get("approval").is_none(),
        "asked only for destructive tools"
    );
}

#[test]
fn contents_are_written_when_asked_for() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let log = dir.path().join("audit.jsonl");
    let program = dir.path().join("echo.js");
    std::fs::write(
        &program,
        format!("return await tools.fixture.echo({{ message: \"{PRIVATE}\" }})"),
    )
    .unwrap();
    let output = std::process::Command::new(toolweave())
        .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
        .arg("run")
        .arg(&program)
        .arg("--config")
        .arg(&config)
        .arg("--audit-log")
        .arg(&log)
        .arg("--audit-log-contents")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let records = lines(&log);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["session"], "run");
    let call = &records[0]["toolCalls"][0];
    assert_eq!(call["arguments"], json!({ "message": PRIVATE }));
    assert_eq!(call["result"], json!(PRIVATE));
}
