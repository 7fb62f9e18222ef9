//! Redaction through the real binary: code reads an address from one tool and passes it to
//! another; the answer the client gets holds only its token, the second tool receives the real
//! value, a token the model writes back into code is turned into the value for the call, and the
//! audit log counts what was redacted without holding it. Also a tool listed directly, and
//! detectors the settings name that do not exist.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolweave_testkit::harness::Toolweave;

use super::toolweave;

/// The address the fixture server hands out (its `CONTACT` variable): code reads it from a tool.
const ADDRESS: &str = "ann.lee@example.org";
/// A key the fixture server hands out (its `STRIPE_KEY` variable).
const KEY: &str = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";

/// The fixture with `CONTACT` and `STRIPE_KEY` set, recording each call's arguments; a
/// settings file redacting email and secrets. Returns the folder, the config, the settings and
/// the record of calls.
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let (dir, config, recorded) = super::face::recording_config();
    let mut servers: Value = serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
    let env = servers["mcpServers"]["fixture"]["env"]
        .as_object_mut()
        .unwrap();
    env.insert("CONTACT".to_owned(), json!(ADDRESS));
    env.insert("STRIPE_KEY".to_owned(), json!(KEY));
    std::fs::write(&config, servers.to_string()).unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(&settings, r#"{"redact": ["email", "secrets"]}"#).unwrap();
    (dir, config, settings, recorded)
}

/// The arguments each call of `tool` received, in order.
fn received(recorded: &Path, tool: &str) -> Vec<Value> {
    std::fs::read_to_string(recorded)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|line| line["tool"] == tool)
        .map(|line| line["arguments"].clone())
        .collect()
}

/// Everything the client got, as one text: content and structured content.
fn whole(execution: &toolweave_testkit::harness::Execution) -> String {
    format!("{}\n{}", execution.text, execution.structured)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_moves_between_tools_and_the_model_reads_only_its_token() {
    let (dir, config, settings, recorded) = setup();
    let log = dir.path().join("audit.jsonl");
    let server = Toolweave::start(
        toolweave(),
        &config,
        &[
            "--settings",
            settings.to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
            "--audit-log-contents",
            "--direct",
            "fixture.env",
        ],
    )
    .await
    .unwrap();

    // Code reads the address from one tool and passes it to another; it sees the real value.
    let moved = server
        .execute(
            "const to = await tools.fixture.env({ name: 'CONTACT' });\n\
             const key = await tools.fixture.env({ name: 'STRIPE_KEY' });\n\
             const sent = await tools.fixture.echo({ message: `mail for ${to}` });\n\
             console.log('sent to', to);\n\
             return { to, sent, key, length: to.length, local: to.split('@')[0].length }",
            "javascript",
        )
        .await
        .unwrap();
    assert_eq!(
        moved.value().unwrap(),
        &json!({
            "to": "<email_1>",
            "sent": "mail for <email_1>",
            "key": "<secret_1>",
            "length": ADDRESS.len(),
            "local": 7,
        }),
        "{}",
        moved.text
    );
    assert!(moved.text.contains("sent to <email_1>"), "{}", moved.text);
    assert!(!whole(&moved).contains(ADDRESS), "{}", whole(&moved));
    assert!(!whole(&moved).contains(KEY), "{}", whole(&moved));
    assert_eq!(
        received(&recorded, "echo"),
        [json!({ "message": format!("mail for {ADDRESS}") })]
    );

    // The model writes the token into its next program: the tool receives the value, and the
    // answer carries the same token again.
    let passed_back = server
        .execute(
            "return await tools.fixture.echo({ message: 'again: <email_1>, not <email_7>' })",
            "typescript",
        )
        .await
        .unwrap();
    assert_eq!(
        passed_back.value().unwrap(),
        &json!("again: <email_1>, not <email_7>")
    );
    assert_eq!(
        received(&recorded, "echo")[1],
        json!({ "message": format!("again: {ADDRESS}, not <email_7>") })
    );

    // Python, an error, and a tool listed directly: the same token for the same value.
    let python = server
        .execute("await tools.fixture.env(name='CONTACT')", "python")
        .await
        .unwrap();
    assert_eq!(
        python.value().unwrap(),
        &json!("<email_1>"),
        "{}",
        python.text
    );
    let thrown = server
        .execute(
            "throw new Error('no answer from ' + await tools.fixture.env({ name: 'CONTACT' }))",
            "javascript",
        )
        .await
        .unwrap();
    assert_eq!(thrown.error_kind(), Some("GuestError"), "{}", thrown.text);
    assert!(
        thrown.text.contains("no answer from <email_1>"),
        "{}",
        thrown.text
    );
    assert!(!whole(&thrown).contains(ADDRESS), "{}", whole(&thrown));
    let direct = server
        .call("fixture__env", json!({ "name": "CONTACT" }))
        .await
        .unwrap();
    let direct_text = serde_json::to_string(&direct).unwrap();
    assert!(direct_text.contains("<email_1>"), "{direct_text}");
    assert!(!direct_text.contains(ADDRESS), "{direct_text}");
    server.stop().await.unwrap();

    // The audit log counts what was redacted and turned back, and holds neither value, even
    // with contents.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(ADDRESS), "{text}");
    assert!(!text.contains(KEY), "{text}");
    let records: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 5, "{text}");
    // The value's address (twice: `to` and `sent`) and key, and the console line's address.
    assert_eq!(records[0]["redacted"], json!({"email": 3, "secrets": 1}));
    assert_eq!(
        records[0]["toolCalls"][2]["arguments"]["message"],
        "mail for <email>"
    );
    assert_eq!(records[1]["toolCalls"][0]["restored"], json!({"email": 1}));
    assert_eq!(
        records[1]["toolCalls"][0]["arguments"]["message"],
        "again: <email_1>, not <email_7>"
    );
    assert_eq!(records[4]["direct"], "fixture.env");
    assert_eq!(records[4]["redacted"], json!({"email": 1}));
}

/// Without redaction the same program's answer holds the address: what the test above sees is
/// redaction's doing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_redaction_the_answer_holds_the_value() {
    let (_dir, config, _settings, _recorded) = setup();
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    let plain = server
        .execute(
            "return await tools.fixture.env({ name: 'CONTACT' })",
            "javascript",
        )
        .await
        .unwrap();
    assert_eq!(plain.value().unwrap(), &json!(ADDRESS));
    server.stop().await.unwrap();
}

/// `--redact` with a flag: only what it names is redacted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_flag_chooses_detectors_too() {
    let (_dir, config, _settings, _recorded) = setup();
    let server = Toolweave::start(toolweave(), &config, &["--redact", "secrets"])
        .await
        .unwrap();
    let both = server
        .execute(
            "return [await tools.fixture.env({ name: 'CONTACT' }), await tools.fixture.env({ name: 'STRIPE_KEY' })]",
            "javascript",
        )
        .await
        .unwrap();
    assert_eq!(both.value().unwrap(), &json!([ADDRESS, "<secret_1>"]));
    server.stop().await.unwrap();
}

/// A detector no one has, in the settings or on the command line, is refused naming those there
/// are.
#[test]
fn an_unknown_detector_names_the_known_ones() {
    let (dir, config, settings, _recorded) = setup();
    std::fs::write(&settings, r#"{"redact": ["emails"]}"#).unwrap();
    let from_file = std::process::Command::new(toolweave())
        .args(["serve", "--config"])
        .arg(&config)
        .arg("--settings")
        .arg(&settings)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&from_file.stderr);
    assert!(!from_file.status.success());
    assert!(stderr.contains("unknown variant `emails`"), "{stderr}");
    assert!(
        stderr.contains("`secrets`, `email`, `phone`, `card`, `ssn`, `nino`, `iban`"),
        "{stderr}"
    );
    let from_flag = std::process::Command::new(toolweave())
        .args(["serve", "--config"])
        .arg(&config)
        .args(["--redact", "mail"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&from_flag.stderr);
    assert!(!from_flag.status.success());
    assert!(
        stderr.contains(
            "unknown detector \"mail\": the detectors are \"secrets\", \"email\", \"phone\", \
             \"card\", \"ssn\", \"nino\", \"iban\""
        ),
        "{stderr}"
    );
    drop(dir);
}

fn through_the_python_sdk(mode: &str) {
    let (_dir, config, settings, recorded) = setup();
    std::fs::write(&settings, r#"{"redact": ["email"]}"#).unwrap();
    super::run_sdk_script(
        "sdk_redaction",
        &[
            config.as_os_str(),
            settings.as_os_str(),
            recorded.as_os_str(),
            ADDRESS.as_ref(),
            mode.as_ref(),
        ],
    );
}

/// The official Python SDK, MCP 2026-07-28 (over HTTP without a session, the token comes back
/// with the answer's session handle).
#[test]
fn an_address_moves_between_tools_through_the_python_sdk() {
    through_the_python_sdk("default");
}

/// The official Python SDK in its legacy mode (MCP 2025-11-25, sessions on both transports).
#[test]
fn an_address_moves_between_tools_through_the_python_sdk_in_legacy_mode() {
    through_the_python_sdk("legacy");
}
