//! The approval cases in `tests/approval/`: each file names flags (and settings) and what a call
//! of each fixture tool gets there: `allow` (called without asking), `ask` (the person at the
//! client is asked; this client declines) or `hidden` (kept out by the policy). Each case runs
//! through the real binary, and `toolweave tools --json` must show the same tiers.

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use toolweave_testkit::harness::{Execution, fixture_config, serve_with};

use super::{ApprovingClient, repo_root, toolweave};

/// The arguments each tool of the table is called with.
fn arguments(tool: &str) -> &'static str {
    match tool {
        "remove" => "{ name: 'x' }",
        "add" => "{ a: 1, b: 2 }",
        "echo" => "{ message: 'hi' }",
        other => panic!("the table names a tool it has no arguments for: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_cases_behave_as_their_files_say() {
    let mut files: Vec<_> = std::fs::read_dir(repo_root().join("tests/approval"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "json")
        })
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    let mut failures = Vec::new();
    for file in &files {
        let case: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        failures.extend(run_case(&name, &case).await);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs one case; what went otherwise than it says.
async fn run_case(name: &str, case: &Value) -> Vec<String> {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        case.get("settings").unwrap_or(&json!({})).to_string(),
    )
    .unwrap();
    let mut flags: Vec<String> = vec!["--settings".into(), settings.display().to_string()];
    flags.extend(
        case["flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|flag| flag.as_str().unwrap().to_owned()),
    );
    let flag_refs: Vec<&str> = flags.iter().map(String::as_str).collect();
    // Declines every question, and keeps them.
    let declining = ApprovingClient::approving_if(|_| false);
    let (client, _) = serve_with(toolweave(), &config, &flag_refs, &[], declining.clone())
        .await
        .unwrap();
    let tiers = listed_tiers(&config, &flag_refs);
    let mut failures = Vec::new();
    for (tool, expected) in case["expect"].as_object().unwrap() {
        let expected = expected.as_str().unwrap();
        let code = format!(
            "try {{ return JSON.stringify(await tools.fixture.{tool}({})) }} catch (e) {{ return 'threw: ' + String(e) }}",
            arguments(tool)
        );
        let Value::Object(call) = json!({ "code": code, "language": "javascript" }) else {
            unreachable!("a literal object");
        };
        let before = declining.asked().len();
        let result = client
            .call_tool(CallToolRequestParams::new("execute_code").with_arguments(call))
            .await
            .unwrap();
        let value = Execution::from_result(result)
            .unwrap()
            .value()
            .unwrap()
            .clone();
        let text = value.as_str().unwrap_or_default().to_owned();
        let asked = declining.asked().len() - before;
        let got = match (asked, text.starts_with("threw: ")) {
            (0, false) => "allow",
            (1, true) if text.contains("declined this call") => "ask",
            (0, true) if text.contains("may not be called") => "hidden",
            _ => "something else",
        };
        if got != expected {
            failures.push(format!(
                "{name}: fixture.{tool} should be {expected}, got {got} (asked {asked} times): {text}"
            ));
        }
        let listed = tiers
            .get(&format!("fixture.{tool}"))
            .map_or("hidden", String::as_str);
        if listed != expected {
            failures.push(format!(
                "{name}: toolweave tools shows fixture.{tool} as {listed}, not {expected}"
            ));
        }
    }
    client.cancel().await.unwrap();
    failures
}

/// `toolweave tools --json` with `flags`: each listed tool's tier.
fn listed_tiers(
    config: &std::path::Path,
    flags: &[&str],
) -> std::collections::HashMap<String, String> {
    let output = std::process::Command::new(toolweave())
        .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
        .args(["tools", "--limit", "100", "--json", "--config"])
        .arg(config)
        .args(flags)
        .env("TOOLWEAVE_LOG", "warn")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            assert!(tool["why"].is_string(), "{tool}");
            (
                tool["name"].as_str().unwrap().to_owned(),
                tool["tier"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}
