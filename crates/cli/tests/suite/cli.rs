//! The command line: `run`, `tools`, `types`, config errors, `--help`.

use std::process::{Command, Output};

use toolweave_testkit::harness::fixture_config;

use super::toolweave;

fn toolweave_cmd(args: &[&str]) -> Output {
    Command::new(toolweave())
        .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn run_prints_the_result_and_logs_apart() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let program = dir.path().join("program.ts");
    std::fs::write(
        &program,
        "const n: number = await tools.fixture.add({ a: 20, b: 22 });\nconsole.log('computed', n);\n({ n })\n",
    )
    .unwrap();
    let output = toolweave_cmd(&[
        "run",
        program.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value, serde_json::json!({ "n": "42" }));
    assert!(
        text(&output.stderr).contains("computed 42"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn run_reports_guest_errors_with_exit_code_1() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let program = dir.path().join("program.js");
    std::fs::write(
        &program,
        "const data = {};\nconst count = data.items.length;\n",
    )
    .unwrap();
    let output = toolweave_cmd(&[
        "run",
        program.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let stderr = text(&output.stderr);
    assert!(stderr.contains("TypeError"), "{stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
}

#[test]
fn tools_and_types_list_the_catalog() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let output = toolweave_cmd(&["tools", "add numbers", "--config", config.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let first = text(&output.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    assert!(
        first.starts_with("tools.fixture.add(") || first.starts_with("tools.fixture.get_sum("),
        "{first}"
    );

    let output = toolweave_cmd(&["types", "--config", config.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let declarations = text(&output.stdout);
    assert!(
        declarations.contains("declare const tools"),
        "{declarations}"
    );
    assert!(declarations.contains("get_sum("), "{declarations}");

    let output = toolweave_cmd(&["types", "--python", "--config", config.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stubs = text(&output.stdout);
    assert!(stubs.contains("\nclass fixture:\n"), "{stubs}");
    assert!(
        stubs.contains("async def get_sum(*, a: float, b: float) -> Any:"),
        "{stubs}"
    );

    let output = toolweave_cmd(&[
        "tools",
        "add numbers",
        "--python",
        "--config",
        config.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let first = text(&output.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    assert!(first.ends_with("(*, a: float, b: float) -> Any"), "{first}");
}

#[test]
fn tools_names_the_servers_that_are_not_available() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let fixture = toolweave_testkit::fixture_binary();
    let write = |servers: serde_json::Value| {
        std::fs::write(
            &config,
            serde_json::json!({ "mcpServers": servers }).to_string(),
        )
        .unwrap();
    };

    write(serde_json::json!({
        "good": { "command": fixture, "args": ["--name", "good"] },
        "missing": { "command": "./toolweave-no-such-server" },
    }));
    let expected = format!(
        "Not available: server \"missing\" could not be started: the command \"./toolweave-no-such-server\" was not found in {} (a relative \"command\" is taken from the directory toolweave was started in; give a full path, or a \"cwd\"); check \"command\" in the config file",
        dir.path().display()
    );
    let run = |args: &[&str]| {
        Command::new(toolweave())
            .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
            .args(args)
            .arg("--config")
            .arg(&config)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let output = run(&["tools", "add numbers"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let shown = text(&output.stdout);
    assert!(shown.starts_with("tools.good."), "{shown}");
    assert!(shown.contains(&expected), "{shown}");
    // As JSON, stdout holds the results only; the servers that are not available go to stderr.
    let output = run(&["tools", "add numbers", "--json"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let results: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        results.as_array().is_some_and(|hits| !hits.is_empty()),
        "{results}"
    );
    assert!(
        text(&output.stderr).contains("toolweave: server \"missing\" is not available"),
        "{}",
        text(&output.stderr)
    );

    // Nothing available at all, and no query: it says so, not "try an empty query".
    write(serde_json::json!({ "missing": { "command": "./toolweave-no-such-server" } }));
    let output = run(&["tools"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        format!("No tools are available.\n{expected}\n")
    );
}

#[test]
fn config_mistakes_name_file_server_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, r#"{"mcpServers": {"github": {"comand": "gh"}}}"#).unwrap();
    let output = toolweave_cmd(&["tools", "--config", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains(path.to_str().unwrap()), "{stderr}");
    assert!(stderr.contains("server \"github\""), "{stderr}");
    assert!(
        stderr.contains("unknown key \"comand\" (did you mean \"command\"?)"),
        "{stderr}"
    );

    let output = toolweave_cmd(&["tools", "--config", "/nonexistent/mcp.json"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("cannot read config file /nonexistent/mcp.json"));
}

#[test]
fn help_is_stable() {
    let output = toolweave_cmd(&["--help"]);
    assert!(output.status.success());
    insta::assert_snapshot!("help", text(&output.stdout));
    let output = toolweave_cmd(&["serve", "--help"]);
    insta::assert_snapshot!("serve_help", text(&output.stdout));
}

#[test]
fn doctor_checks_the_sandbox_and_every_server() {
    let (dir, config) = fixture_config(&["alpha", "beta"]).unwrap();
    let output = toolweave_cmd(&["doctor", "--config", config.to_str().unwrap()]);
    let stdout = text(&output.stdout);
    for server in ["alpha", "beta"] {
        assert!(
            stdout.contains(&format!("  {server} (stdio): ready, 21 tools (")),
            "{stdout}"
        );
    }
    let seccomp = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .contains("Seccomp:");
    if seccomp {
        assert!(stdout.contains("worker confinement: working"), "{stdout}");
    } else {
        toolweave_testkit::skip::missing_prerequisite(
            "the confinement line of doctor_checks_the_sandbox_and_every_server",
            "this kernel has no seccomp",
        );
    }

    // A server that cannot start is named, with the cause, and the exit status says so.
    let broken = dir.path().join("broken.json");
    std::fs::write(
        &broken,
        r#"{"mcpServers": {"gone": {"command": "/nonexistent/server"}}}"#,
    )
    .unwrap();
    let output = toolweave_cmd(&["doctor", "--config", broken.to_str().unwrap()]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("  gone (stdio): FAILED after "), "{stdout}");
    assert!(stdout.contains("/nonexistent/server"), "{stdout}");
}

#[test]
fn servers_shows_each_upstream_state_tools_and_error() {
    let (dir, _) = fixture_config(&[]).unwrap();
    let fixture = toolweave_testkit::fixture_binary();
    let config = dir.path().join("servers.json");
    std::fs::write(
        &config,
        serde_json::json!({ "mcpServers": {
            "good": { "command": fixture, "args": ["--name", "good", "--instructions", "Call add for sums.\nNever call crash."] },
            "broken": { "command": fixture, "args": ["--fail-start"] },
            "off": { "command": fixture, "disabled": true },
        }})
        .to_string(),
    )
    .unwrap();
    let output = toolweave_cmd(&["servers", "--config", config.to_str().unwrap()]);
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "a failed server fails the command: {stdout}"
    );
    assert!(
        stdout.contains("good (stdio): ready, 21 tools ("),
        "{stdout}"
    );
    // What the server says about using it, under its line.
    assert!(
        stdout.contains(" ms)\n  may: unboxed: everything you may (your files, the network, toolweave's environment); add \"sandbox\" to its entry, or to toolweave's settings file for every server, to box it\n  instructions:\n    Call add for sums.\n    Never call crash.\n"),
        "{stdout}"
    );
    assert!(stdout.contains("broken (stdio): FAILED after "), "{stdout}");
    assert!(
        stdout.contains("failing on purpose"),
        "the stderr tail: {stdout}"
    );
    assert!(stdout.contains("off: disabled in the config"), "{stdout}");

    let output = toolweave_cmd(&["servers", "--json", "--config", config.to_str().unwrap()]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let servers = report["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 2, "{report}");
    let good = servers.iter().find(|s| s["name"] == "good").unwrap();
    assert_eq!(good["state"], "ready");
    assert_eq!(good["tools"], 21);
    assert!(good["error"].is_null());
    assert_eq!(
        good["instructions"],
        "Call add for sums.\nNever call crash."
    );
    let broken = servers.iter().find(|s| s["name"] == "broken").unwrap();
    assert_eq!(broken["state"], "failed");
    assert!(
        broken["error"].as_str().unwrap().contains("broken"),
        "{broken}"
    );
    assert_eq!(report["disabled"], serde_json::json!(["off"]));
}
