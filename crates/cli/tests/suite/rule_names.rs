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
}
