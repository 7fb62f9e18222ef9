//! Allow and deny rules: a tool the policy keeps from code is absent from search, describe and
//! typings, and a call to it fails with a policy error, whatever way code names it.

use serde_json::json;
use toolweave_testkit::harness::{Toolweave, fixture_config};

use super::toolweave;

const RULES: [&str; 8] = [
    "--allow",
    "alpha.*",
    "--allow",
    "beta.echo",
    "--deny",
    "alpha.add",
    "--deny",
    "*.crash",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denied_tools_are_invisible_and_uncallable() {
    let (_dir, config) = fixture_config(&["alpha", "beta"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &RULES)
        .await
        .unwrap();

    let found = server
        .call(
            "search_tools",
            json!({ "query": "add two numbers", "limit": 50 }),
        )
        .await
        .unwrap();
    let names: Vec<String> = found.structured_content.unwrap()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"alpha.get_sum".to_owned()), "{names:?}");
    for hidden in ["alpha.add", "beta.add", "beta.get_sum", "alpha.crash"] {
        assert!(!names.contains(&hidden.to_owned()), "{hidden} in {names:?}");
    }
    let described = server
        .call(
            "describe_tools",
            json!({ "names": ["alpha.add", "beta.echo"] }),
        )
        .await
        .unwrap();
    let text = &described.content[0].as_text().unwrap().text;
    assert!(text.contains("echo"), "{text}");
    assert!(!text.contains("add(args"), "{text}");

    let code = r#"
        const tries = {
          denied: () => tools.alpha.add({ a: 1, b: 2 }),
          byOriginalName: () => callMCPTool("mcp__alpha__add", { a: 1, b: 2 }),
          notAllowed: () => tools.beta.add({ a: 1, b: 2 }),
          deniedEverywhere: () => tools.alpha.crash({}),
        };
        const out = {};
        for (const [name, call] of Object.entries(tries)) {
          try { out[name] = await call(); } catch (e) { out[name] = String(e); }
        }
        out.listed = Object.keys(tools.alpha).includes("add");
        out.allowed = await tools.alpha.get_sum({ a: 1, b: 2 });
        out.allowedOne = await tools.beta.echo({ message: "hi" });
        return out;
    "#;
    let result = server.execute(code, "typescript").await.unwrap();
    let value = result.value().unwrap();
    for (key, rule) in [
        ("denied", "the deny rule \"alpha.add\""),
        ("byOriginalName", "the deny rule \"alpha.add\""),
        ("notAllowed", "no allow rule matches it"),
        ("deniedEverywhere", "the deny rule \"*.crash\""),
    ] {
        let message = value[key].as_str().unwrap();
        assert!(message.contains("may not be called"), "{key}: {message}");
        assert!(message.contains(rule), "{key}: {message}");
    }
    assert_eq!(value["listed"], json!(false), "a denied tool is not listed");
    assert_eq!(value["allowed"], json!("3"));
    assert_eq!(value["allowedOne"], json!("hi"));

    let python = server
        .execute(
            "try:\n    await tools.alpha.add(a=1, b=2)\n    out = 'called'\nexcept Exception as e:\n    out = str(e)\nout",
            "python",
        )
        .await
        .unwrap();
    let message = python.value().unwrap().as_str().unwrap().to_owned();
    assert!(message.contains("may not be called"), "{message}");
    server.stop().await.unwrap();
}

#[test]
fn typings_leave_denied_tools_out_and_the_settings_file_adds_rules() {
    let (dir, config) = fixture_config(&["alpha"]).unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(&settings, r#"{"deny": ["alpha.echo"]}"#).unwrap();
    let output = std::process::Command::new(toolweave())
        .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
        .args(["types", "--config"])
        .arg(&config)
        .arg("--settings")
        .arg(&settings)
        .args(["--deny", "alpha.add"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let declarations = String::from_utf8(output.stdout).unwrap();
    assert!(declarations.contains("get_sum("), "{declarations}");
    assert!(!declarations.contains("add("), "{declarations}");
    assert!(!declarations.contains("echo("), "{declarations}");

    std::fs::write(&settings, r#"{"denny": ["alpha.echo"]}"#).unwrap();
    let output = std::process::Command::new(toolweave())
        .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
        .args(["types", "--config"])
        .arg(&config)
        .arg("--settings")
        .arg(&settings)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown field `denny`"), "{stderr}");
}

/// Budgets beyond the call count: calls per tool (by whatever name code uses) and bytes from
/// upstream servers; each ends the execution naming the limit, and the stats say what was used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budgets_per_tool_and_bytes_end_the_execution_and_stats_show_use() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(
        toolweave(),
        &config,
        &["--max-calls-per-tool", "3", "--max-upstream-bytes", "3000"],
    )
    .await
    .unwrap();
    let looped = server
        .execute(
            "for (let i = 0; i < 5; i++) await tools.fixture.add({ a: i, b: 1 }); return 'done'",
            "javascript",
        )
        .await
        .unwrap();
    assert_eq!(
        looped.error_kind(),
        Some("ToolCallLimit"),
        "{}",
        looped.text
    );
    assert!(
        looped.text.contains("fixture.add more than 3 times"),
        "{}",
        looped.text
    );
    assert!(
        looped.text.contains("--max-calls-per-tool"),
        "{}",
        looped.text
    );
    assert_eq!(
        looped.structured["stats"]["callsByTool"],
        json!({ "fixture.add": 3 })
    );

    // Another name for the same tool draws on the same budget.
    let mixed = server
        .execute(
            "await tools.fixture.add({ a: 1, b: 1 }); await tools.fixture.add({ a: 1, b: 1 }); \
             await callMCPTool('mcp__fixture__add', { a: 1, b: 1 }); \
             await callMCPTool('mcp__fixture__add', { a: 1, b: 1 }); return 'done'",
            "javascript",
        )
        .await
        .unwrap();
    assert_eq!(mixed.error_kind(), Some("ToolCallLimit"), "{}", mixed.text);

    let large = server
        .execute(
            "const a = await tools.fixture.large({ bytes: 2000 }); \
             const b = await tools.fixture.large({ bytes: 2000 }); return a.length + b.length",
            "javascript",
        )
        .await
        .unwrap();
    assert_eq!(
        large.error_kind(),
        Some("UpstreamBytesLimit"),
        "{}",
        large.text
    );
    assert!(
        large.text.contains("--max-upstream-bytes 3000"),
        "{}",
        large.text
    );

    let fine = server
        .execute(
            "return await tools.fixture.large({ bytes: 1000 })",
            "javascript",
        )
        .await
        .unwrap();
    assert_eq!(fine.value().unwrap().as_str().unwrap().len(), 1000);
    let used = fine.structured["stats"]["upstreamBytes"].as_u64().unwrap();
    assert!((1000..1200).contains(&used), "{used}");
    server.stop().await.unwrap();
}

/// Without --settings, toolweave reads ~/.config/toolweave/settings.json when it exists.
#[test]
fn the_settings_file_in_the_home_directory_is_read() {
    let (dir, config) = fixture_config(&["alpha"]).unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".config/toolweave")).unwrap();
    std::fs::write(
        home.join(".config/toolweave/settings.json"),
        r#"{"deny": ["alpha.add"]}"#,
    )
    .unwrap();
    let output = std::process::Command::new(toolweave())
        .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
        .args(["types", "--config"])
        .arg(&config)
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("TOOLWEAVE_SETTINGS")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let declarations = String::from_utf8(output.stdout).unwrap();
    assert!(declarations.contains("get_sum("), "{declarations}");
    assert!(!declarations.contains("add("), "{declarations}");
}
