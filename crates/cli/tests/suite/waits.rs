//! Servers still starting: discovery waits briefly and then answers with the servers that are
//! ready, naming the others; a call from code still waits for its server; `servers`, `doctor`
//! and `tools` say whom they wait for, and `doctor` takes the startup flag.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolweave_testkit::harness::Toolweave;

use super::toolweave;

/// A config with `quick` (ready at once), `late` (ready after `late_ms`) and `hung` (ready after
/// ten minutes: never, for these tests), each the fixture server. Servers are in name order.
fn servers(dir: &Path, late_ms: u64) -> PathBuf {
    let fixture = toolweave_testkit::fixture_binary();
    let entry = |name: &str, delay_ms: u64| {
        let args = json!(["--name", name, "--start-delay-ms", delay_ms.to_string()]);
        json!({ "command": fixture, "args": args })
    };
    let config = json!({ "mcpServers": {
        "quick": entry("quick", 0),
        "late": entry("late", late_ms),
        "hung": entry("hung", 600_000),
    }});
    let path = dir.join("mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// The guest names of a `search_tools` answer's results.
fn names(answer: &rmcp::model::CallToolResult) -> Vec<String> {
    answer.structured_content.as_ref().unwrap()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The servers a `search_tools` answer names as not available, with why.
fn unavailable(answer: &rmcp::model::CallToolResult) -> Vec<(String, String)> {
    answer.structured_content.as_ref().unwrap()["unavailable"]
        .as_array()
        .map(|servers| {
            servers
                .iter()
                .map(|server| {
                    (
                        server["server"].as_str().unwrap().to_owned(),
                        server["reason"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// How long a server that never answers is waited for, at most, by a call from code.
const STARTUP_TIMEOUT_MS: &str = "120000";

/// Far less than the startup timeout, and far more than the 2 s discovery waits: generous for a
/// loaded machine.
const PROMPT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_costs_discovery_seconds_not_the_startup_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let config = servers(dir.path(), 6_000);
    let server = Toolweave::start(
        toolweave(),
        &config,
        &["--startup-timeout-ms", STARTUP_TIMEOUT_MS],
    )
    .await
    .unwrap();

    let asked = Instant::now();
    let found = server
        .call(
            "search_tools",
            json!({ "query": "add two numbers", "limit": 50 }),
        )
        .await
        .unwrap();
    assert!(
        asked.elapsed() < PROMPT,
        "the search took {:?}",
        asked.elapsed()
    );
    let found_names = names(&found);
    assert!(
        found_names.contains(&"quick.add".to_owned()),
        "{found_names:?}"
    );
    assert!(
        found_names.iter().all(|name| name.starts_with("quick.")),
        "{found_names:?}"
    );
    let still_starting = |server: &str| {
        (
            server.to_owned(),
            format!(
                "server \"{server}\" is still starting, so its tools are not listed yet; look again in a moment (a call from code waits for it)"
            ),
        )
    };
    assert_eq!(
        unavailable(&found),
        [still_starting("hung"), still_starting("late")]
    );
    let text = &found.content[0].as_text().unwrap().text;
    assert!(text.contains("server \"hung\" is still starting"), "{text}");

    // Describing a tool of a server still starting waits for it a while (10 s), then says
    // that the server has not listed its tools, never that the tool does not exist.
    let asked = Instant::now();
    let described = server
        .call("describe_tools", json!({ "names": ["hung.add"] }))
        .await
        .unwrap();
    assert!(
        asked.elapsed() < PROMPT,
        "describe took {:?}",
        asked.elapsed()
    );
    let text = &described.content[0].as_text().unwrap().text;
    assert!(!text.contains("no tool named"), "{text}");
    assert!(
        text.contains("\"hung.add\" is not described: server \"hung\" has not listed its tools"),
        "{text}"
    );
    assert!(text.contains("server \"hung\" is still starting"), "{text}");
    assert_eq!(
        described.structured_content.as_ref().unwrap()["unready"],
        json!([["hung.add", "hung"]])
    );

    // Guest code: discovery answers with what is ready; a call waits for its own server.
    let asked = Instant::now();
    let run = server
        .execute(
            r#"
            const found = (await searchTools("add two numbers", 50)).map((hit) => hit.name);
            const late = await tools.late.add({ a: 2, b: 3 });
            const quick = await tools.quick.add({ a: 1, b: 1 });
            return { quickFound: found.includes("quick.add"), hungFound: found.some((name) => name.startsWith("hung.")), late, quick };
            "#,
            "javascript",
        )
        .await
        .unwrap();
    assert_eq!(
        run.value().unwrap(),
        &json!({ "quickFound": true, "hungFound": false, "late": "5", "quick": "2" })
    );
    assert!(
        asked.elapsed() < PROMPT,
        "the execution took {:?}",
        asked.elapsed()
    );

    // Once `late` is ready, a search lists its tools, without waiting for `hung`.
    let asked = Instant::now();
    let found = server
        .call(
            "search_tools",
            json!({ "query": "add two numbers", "limit": 50 }),
        )
        .await
        .unwrap();
    assert!(
        asked.elapsed() < PROMPT,
        "the search took {:?}",
        asked.elapsed()
    );
    assert!(
        names(&found).contains(&"late.add".to_owned()),
        "{:?}",
        names(&found)
    );
    assert_eq!(unavailable(&found), [still_starting("hung")]);
    server.stop().await.unwrap();
}

fn run(args: &[&str], config: &Path) -> (Option<i32>, String, String, Duration) {
    let started = Instant::now();
    let output = Command::new(toolweave())
        .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
        .args(args)
        .arg("--config")
        .arg(config)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        started.elapsed(),
    )
}

/// The position of the line of `text` that starts with `start` (after its indent).
fn line_of(text: &str, start: &str) -> usize {
    text.lines()
        .position(|line| line.trim_start().starts_with(start))
        .unwrap_or_else(|| panic!("no line starting {start:?} in:\n{text}"))
}

#[test]
fn servers_and_doctor_report_each_server_as_it_settles_and_name_the_ones_still_starting() {
    let dir = tempfile::tempdir().unwrap();
    let config = servers(dir.path(), 600_000);
    let waiting = "still starting after 2 s: \"hung\" and \"late\"; waiting up to 4000 ms in all (--startup-timeout-ms sets it)";
    let timed_out = "did not finish starting within 4000 ms (--startup-timeout-ms)";

    let (code, stdout, _, took) = run(&["servers", "--startup-timeout-ms", "4000"], &config);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(took < PROMPT, "servers took {took:?}");
    // Ready servers first, then who is still being waited for, then what became of them.
    let quick = line_of(&stdout, "quick (stdio): ready, ");
    let still = line_of(&stdout, waiting);
    let hung = line_of(&stdout, "hung (stdio): FAILED after ");
    assert!(quick < still && still < hung, "{stdout}");
    assert!(stdout.contains(timed_out), "{stdout}");

    let (code, stdout, _, took) = run(&["doctor", "--startup-timeout-ms", "4000"], &config);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(took < PROMPT, "doctor took {took:?}");
    let quick = line_of(&stdout, "quick (stdio): ready, ");
    let still = line_of(&stdout, waiting);
    let late = line_of(&stdout, "late (stdio): FAILED after ");
    assert!(quick < still && still < late, "{stdout}");
    assert!(stdout.contains(timed_out), "{stdout}");
    assert!(stdout.ends_with("problem(s) found\n"), "{stdout}");

    // As JSON, one document once every server has settled, in config order.
    let (code, stdout, _, _) = run(
        &["servers", "--json", "--startup-timeout-ms", "4000"],
        &config,
    );
    assert_eq!(code, Some(1), "{stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let states: Vec<(&str, &str)> = report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|server| {
            (
                server["name"].as_str().unwrap(),
                server["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [("hung", "failed"), ("late", "failed"), ("quick", "ready")]
    );
}

#[test]
fn tools_waits_for_every_server_and_says_whom_it_waits_for() {
    let dir = tempfile::tempdir().unwrap();
    let config = servers(dir.path(), 600_000);
    let (code, stdout, stderr, took) = run(
        &["tools", "add two numbers", "--startup-timeout-ms", "4000"],
        &config,
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(took < PROMPT, "tools took {took:?}");
    assert!(
        stderr.contains(
            "toolweave: waiting for \"hung\" and \"late\" to start (up to 4000 ms in all; --startup-timeout-ms sets it)"
        ),
        "{stderr}"
    );
    assert!(stdout.starts_with("tools.quick."), "{stdout}");
    assert!(
        stdout.contains("Not available: server \"hung\" did not finish starting within 4000 ms"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describing_a_tool_of_a_server_still_starting_waits_for_that_server() {
    let dir = tempfile::tempdir().unwrap();
    // `late` is ready 4 s after start: past the 2 s that discovery waits for every server.
    let config = servers(dir.path(), 4_000);
    let server = Toolweave::start(
        toolweave(),
        &config,
        &["--startup-timeout-ms", STARTUP_TIMEOUT_MS],
    )
    .await
    .unwrap();

    // From code, by the server's name alone.
    let run = server
        .execute(
            r#"const described = await describeTools(["late"]); return described.tools.map((tool) => tool.name).includes("late.add");"#,
            "typescript",
        )
        .await
        .unwrap();
    assert!(!run.is_error, "{}", run.text);
    assert_eq!(run.structured["result"], json!(true), "{}", run.text);
    // And over MCP, by the tool's name: the server is ready by now, so this one answers at once.
    let described = server
        .call("describe_tools", json!({ "names": ["late.add"] }))
        .await
        .unwrap();
    let text = &described.content[0].as_text().unwrap().text;
    assert!(!described.is_error.unwrap_or(false), "{text}");
    assert!(text.contains("add("), "{text}");
    assert!(!text.contains("no tool named"), "{text}");
    let structured = described.structured_content.as_ref().unwrap();
    assert_eq!(structured["tools"][0]["name"], "late.add", "{structured}");

    server.stop().await.unwrap();
}
