//! A rule matches a tool by each of its names: the name code calls (`everything.get_sum`), the
//! server's own (`everything.get-sum`) and `mcp__everything__get-sum`, and globs of each; every
//! rule kind, through the real binary with server-everything (whose names have dashes). A rule
//! that matches no tool is named, with the closest tool.

use serde_json::json;
use toolweave_testkit::harness::{Toolweave, config_home};
use toolweave_testkit::skip::missing_prerequisite;

use super::npm::npm_config;
use super::toolweave;

/// Every spelling of server-everything's `get-sum`.
const SPELLINGS: [&str; 6] = [
    "everything.get_sum",
    "everything.get-sum",
    "mcp__everything__get-sum",
    "everything.get_s*",
    "everything.get-s*",
    "mcp__everything__get-s*",
];

/// `toolweave run` of `code` with `flags`: its stdout and stderr together.
fn run(config: &std::path::Path, code: &str, flags: &[&str]) -> String {
    let program = config.with_file_name("program.js");
    std::fs::write(&program, code).unwrap();
    let output = std::process::Command::new(toolweave())
        .env("XDG_CONFIG_HOME", config_home())
        .arg("run")
        .arg(&program)
        .arg("--config")
        .arg(config)
        .args(flags)
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

const CALL: &str = "try { return await tools.everything.get_sum({ a: 1, b: 2 }); } catch (e) { return String(e); }";
const ECHO: &str = "try { return await tools.everything.echo({ message: 'up' }); } catch (e) { return String(e); }";

#[test]
fn every_rule_kind_matches_every_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let config = match npm_config(dir.path()) {
        Ok(config) => config,
        Err(why) => {
            missing_prerequisite("every_rule_kind_matches_every_spelling", &why);
            return;
        }
    };
    for spelling in SPELLINGS {
        let denied = run(&config, CALL, &["--deny", spelling]);
        assert!(
            denied.contains(&format!("the deny rule \\\"{spelling}\\\" matches it"))
                || denied.contains(&format!("the deny rule \"{spelling}\" matches it")),
            "--deny {spelling}: {denied}"
        );
        let allowed = run(&config, CALL, &["--allow", spelling]);
        assert!(
            allowed.contains("The sum of 1 and 2 is 3"),
            "--allow {spelling}: {allowed}"
        );
        let other = run(&config, ECHO, &["--allow", spelling]);
        assert!(
            other.contains("no allow rule matches it"),
            "--allow {spelling}: {other}"
        );
        let asked = run(&config, CALL, &["--ask", spelling]);
        assert!(
            asked.contains(&format!("ask rule \\\"{spelling}\\\""))
                || asked.contains(&format!("ask rule \"{spelling}\"")),
            "--ask {spelling}: {asked}"
        );
        assert!(!asked.contains("The sum of"), "--ask {spelling}: {asked}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_tools_take_every_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let config = match npm_config(dir.path()) {
        Ok(config) => config,
        Err(why) => {
            missing_prerequisite("allowed_tools_take_every_spelling", &why);
            return;
        }
    };
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    let code = "const out = {};\
        try { out.sum = await tools.everything.get_sum({ a: 1, b: 2 }); } catch (e) { out.sum = String(e); }\
        try { out.echo = await tools.everything.echo({ message: 'up' }); } catch (e) { out.echo = String(e); }\
        return out;";
    for spelling in SPELLINGS {
        let result = server
            .call(
                "execute_code",
                json!({ "code": code, "language": "javascript", "allowedTools": [spelling] }),
            )
            .await
            .unwrap();
        let text = serde_json::to_string(&result).unwrap();
        assert!(
            text.contains("The sum of 1 and 2 is 3"),
            "allowedTools {spelling}: {text}"
        );
        assert!(
            text.contains("allowedTools"),
            "allowedTools {spelling}: {text}"
        );
    }
    server.stop().await.unwrap();
}

#[test]
fn a_rule_that_matches_no_tool_is_named_with_the_closest() {
    let dir = tempfile::tempdir().unwrap();
    let config = match npm_config(dir.path()) {
        Ok(config) => config,
        Err(why) => {
            missing_prerequisite(
                "a_rule_that_matches_no_tool_is_named_with_the_closest",
                &why,
            );
            return;
        }
    };
    let output = std::process::Command::new(toolweave())
        .env("XDG_CONFIG_HOME", config_home())
        .args(["tools", "get_sum", "--limit", "50", "--config"])
        .arg(&config)
        .args([
            "--deny",
            "everything.get_summ",
            "--ask",
            "everything.get_sum",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(
            "deny rule \"everything.get_summ\" matches no tool of the ready servers, so it has no effect; did you mean everything.get_sum"
        ),
        "{stdout}"
    );
    assert!(
        !stdout.contains("ask rule \"everything.get_sum\" matches no"),
        "{stdout}"
    );
    assert!(
        stdout.contains("everything.get_sum: ask (the ask rule \"everything.get_sum\" matches it)"),
        "{stdout}"
    );

    // The settings file's rules and its identities', in `doctor` (servers started) and in
    // `config` (the tools last pinned, here by the `tools` run above).
    let home = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({
            "deny": ["everything.get_summ"],
            "ask": ["mcp__everything__get-sum"],
            "identities": { "ci": { "tokenEnv": "TW_UNMATCHED_TOKEN", "allow": ["everything.ech*", "everything.nope"] } }
        })
        .to_string(),
    )
    .unwrap();
    let command = |args: &[&str]| {
        let output = std::process::Command::new(toolweave())
            .env("XDG_CONFIG_HOME", home.path())
            .args(args)
            .arg("--config")
            .arg(&config)
            .arg("--settings")
            .arg(&settings)
            .output()
            .unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    let summ = "deny rule \"everything.get_summ\" matches no tool of the ready servers, so it has no effect; did you mean everything.get_sum";
    let nope = "identity \"ci\": allow rule \"everything.nope\" matches no tool";
    let (config_ok, listed) = command(&["config"]);
    assert!(config_ok, "{listed}");
    assert!(
        !listed.contains("matches no tool"),
        "nothing is pinned yet, so nothing is checked: {listed}"
    );
    let (doctor_ok, doctor) = command(&["doctor"]);
    assert!(!doctor_ok, "two rules match nothing: {doctor}");
    assert!(doctor.contains(summ) && doctor.contains(nope), "{doctor}");
    assert!(doctor.contains("2 problem(s) found"), "{doctor}");
    assert!(
        !doctor.contains("mcp__everything__get-sum\" matches no"),
        "{doctor}"
    );
    assert!(!doctor.contains("everything.ech*\" matches no"), "{doctor}");
    let (_, pinned) = command(&["tools", "echo"]);
    assert!(pinned.contains(summ), "{pinned}");
    let (config_ok, listed) = command(&["config"]);
    assert!(config_ok, "{listed}");
    assert!(
        listed.contains("Rules that match none of the tools last pinned")
            && listed.contains(summ)
            && listed.contains(nope),
        "{listed}"
    );
    assert!(!listed.contains("everything.ech*\" matches no"), "{listed}");
}

/// A config of server-everything and server-filesystem, the latter named `file-system` (so its
/// guest name, `file_system`, differs too), with `timeouts` as everything's `toolTimeouts`.
fn dashed_config(
    dir: &std::path::Path,
    timeouts: serde_json::Value,
) -> Result<std::path::PathBuf, String> {
    let base = npm_config(dir)?;
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&base).unwrap()).unwrap();
    let servers = config["mcpServers"].as_object_mut().unwrap();
    let filesystem = servers.remove("filesystem").unwrap();
    servers.remove("memory");
    servers.insert("file-system".to_owned(), filesystem);
    servers["everything"]["toolTimeouts"] = timeouts;
    let path = dir.join("dashed.json");
    std::fs::write(&path, config.to_string()).unwrap();
    Ok(path)
}

/// Approve rules in each spelling of server-filesystem's destructive `write_file` (of a server
/// named `file-system`): under `toolweave run`, where nobody can be asked, the call goes ahead
/// only when an approve rule matches it. `toolTimeouts` keyed by either spelling of
/// everything's `trigger-long-running-operation` cuts a slow call short and names the entry.
/// `--direct` in each spelling lists the tool to the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_timeouts_and_direct_take_every_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let config = match dashed_config(dir.path(), json!({})) {
        Ok(config) => config,
        Err(why) => {
            missing_prerequisite("approve_timeouts_and_direct_take_every_spelling", &why);
            return;
        }
    };
    let target = dir.path().join("files").join("written.txt");
    let write = format!(
        "try {{ return await tools.file_system.write_file({{ path: {:?}, content: 'written' }}); }} catch (e) {{ return String(e); }}",
        target.to_str().unwrap()
    );
    let refused = run(&config, &write, &[]);
    assert!(refused.contains("nobody can be asked"), "{refused}");
    assert!(!target.exists(), "{refused}");
    for spelling in [
        "file_system.write_file",
        "file-system.write_file",
        "mcp__file-system__write_file",
        "file_system.write_*",
        "file-system.write_*",
        "mcp__file-system__write_*",
    ] {
        let approved = run(&config, &write, &["--approve", spelling]);
        assert!(
            std::fs::read_to_string(&target).is_ok_and(|text| text == "written"),
            "--approve {spelling}: {approved}"
        );
        std::fs::remove_file(&target).unwrap();
    }

    let slow = "try { return await tools.everything.trigger_long_running_operation({ duration: 5, steps: 1 }); } catch (e) { return String(e); }";
    for key in [
        "trigger_long_running_operation",
        "trigger-long-running-operation",
    ] {
        let config = dashed_config(dir.path(), json!({ key: 300 })).unwrap();
        let started = std::time::Instant::now();
        let timed_out = run(&config, slow, &[]);
        assert!(
            timed_out.contains("within 300 ms") && timed_out.contains("toolTimeouts"),
            "toolTimeouts {key}: {timed_out}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "toolTimeouts {key}: {timed_out}"
        );
    }

    // One gateway, one --direct per spelling, each naming a different tool.
    let server = Toolweave::start(
        toolweave(),
        &config,
        &[
            "--direct",
            "everything.get_sum",
            "--direct",
            "everything.get-env",
            "--direct",
            "mcp__everything__get-tiny-image",
            "--direct",
            "file_system.read_text*",
        ],
    )
    .await
    .unwrap();
    let names: Vec<String> = server
        .list_tools()
        .await
        .unwrap()
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    server.stop().await.unwrap();
    for tool in ["get-sum", "get-env", "get-tiny-image", "read_text_file"] {
        assert!(
            names
                .iter()
                .any(|name| name.ends_with(&format!("__{tool}"))),
            "{tool}: {names:?}"
        );
    }
}

/// Identities' rules in each spelling: one HTTP gateway, an identity per spelling of a deny
/// rule over everything's `get-sum`, and one without rules that gets the sum.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_rules_take_every_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let config = match npm_config(dir.path()) {
        Ok(config) => config,
        Err(why) => {
            missing_prerequisite("identity_rules_take_every_spelling", &why);
            return;
        }
    };
    let mut identities = serde_json::Map::new();
    let mut tokens = Vec::new();
    for (index, spelling) in SPELLINGS.iter().map(Some).chain([None]).enumerate() {
        let variable = format!("TW_RULE_TOKEN_{index}");
        let mut identity = json!({ "tokenEnv": variable });
        if let Some(spelling) = spelling {
            identity["deny"] = json!([spelling]);
        }
        identities.insert(format!("id{index}"), identity);
        tokens.push((variable, format!("tw-rule-token-{index}-5c1d"), spelling));
    }
    let settings = dir.path().join("settings.json");
    std::fs::write(&settings, json!({ "identities": identities }).to_string()).unwrap();
    let env: Vec<(&str, &str)> = tokens
        .iter()
        .map(|(variable, token, _)| (variable.as_str(), token.as_str()))
        .collect();
    let server = toolweave_testkit::http::HttpToolweave::start(
        toolweave(),
        &config,
        &["--settings", settings.to_str().unwrap()],
        &env,
    )
    .await
    .unwrap();
    for (_, token, spelling) in &tokens {
        let session = server.connect(Some(token)).await.unwrap();
        let text = session.execute(CALL, "javascript").await.unwrap().text;
        match spelling {
            Some(spelling) => assert!(
                text.contains(&format!("the deny rule \\\"{spelling}\\\" matches it"))
                    || text.contains(&format!("the deny rule \"{spelling}\" matches it")),
                "identity deny {spelling}: {text}"
            ),
            None => assert!(text.contains("The sum of 1 and 2 is 3"), "{text}"),
        }
    }
}
