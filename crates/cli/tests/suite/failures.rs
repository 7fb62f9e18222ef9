//! Upstream servers that fail to start, crash, or hang: the error names the cause, the other
//! servers keep working, and `initialize` never waits for upstreams.

use std::time::{Duration, Instant};

use serde_json::json;
use toolweave_testkit::fixture_binary;
use toolweave_testkit::harness::Toolweave;

use super::toolweave;

fn write_config(dir: &std::path::Path, servers: serde_json::Value) -> std::path::PathBuf {
    let path = dir.join("mcp.json");
    std::fs::write(
        &path,
        serde_json::to_vec(&json!({ "mcpServers": servers })).unwrap(),
    )
    .unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_server_is_reported_and_the_others_work() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture_binary();
    let config = write_config(
        dir.path(),
        json!({
            "good": { "command": fixture, "args": ["--name", "good"] },
            "broken": { "command": fixture, "args": ["--fail-start"] },
            "missing": { "command": "/nonexistent/toolweave-no-such-server" },
            "remote": { "type": "http", "url": "http://127.0.0.1:9/mcp" },
        }),
    );
    let server = Toolweave::start(toolweave(), &config, &["--startup-timeout-ms", "5000"])
        .await
        .unwrap();

    let good = server
        .execute("await tools.good.add({ a: 1, b: 1 })", "typescript")
        .await
        .unwrap();
    assert_eq!(good.value().unwrap(), &json!("2"));

    // A search lists the good server's tools and says whose tools are missing, and why.
    let search = server
        .call("search_tools", json!({ "query": "add numbers" }))
        .await
        .unwrap();
    let text = search.content[0].as_text().unwrap().text.clone();
    assert!(text.starts_with("tools.good.add("), "{text}");
    for line in [
        "Not available: server \"broken\" exited during startup",
        "Not available: server \"missing\" could not be started: the command \"/nonexistent/toolweave-no-such-server\" was not found; check \"command\" in the config file",
        "Not available: server \"remote\" (http, http://127.0.0.1:9/mcp) could not be connected: the connection was refused",
    ] {
        assert!(text.contains(line), "{line} is missing from:\n{text}");
    }
    assert!(
        text.ends_with("Use describe_tools for full type declarations."),
        "{text}"
    );
    let structured = search.structured_content.unwrap();
    let unavailable: Vec<&str> = structured["unavailable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|server| server["server"].as_str().unwrap())
        .collect();
    assert_eq!(unavailable, ["broken", "missing", "remote"], "{structured}");

    // Describing a tool of a server that is not available says so, too.
    let described = server
        .call(
            "describe_tools",
            json!({ "names": ["good.add", "missing.anything"] }),
        )
        .await
        .unwrap();
    let text = described.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("function add(args: {"), "{text}");
    assert!(
        text.contains(
            "\"missing.anything\" is not described: server \"missing\" has not listed its tools"
        ),
        "{text}"
    );
    assert!(
        text.contains("Not available: server \"missing\" could not be started"),
        "{text}"
    );
    let described = server
        .call("describe_tools", json!({ "names": ["good.add"] }))
        .await
        .unwrap();
    let text = described.content[0].as_text().unwrap().text.clone();
    assert!(!text.contains("Not available"), "{text}");

    let broken = server
        .execute(
            "try { await tools.broken.add({ a: 1, b: 1 }); return 'no error' } catch (e) { return String(e) }",
            "typescript",
        )
        .await
        .unwrap();
    let message = broken.value().unwrap().as_str().unwrap().to_owned();
    assert!(message.contains("broken"), "{message}");
    assert!(
        message.contains("failing on purpose"),
        "the stderr tail is missing: {message}"
    );

    let missing = server
        .execute(
            "try { await tools.missing.anything({}); return 'no error' } catch (e) { return String(e) }",
            "typescript",
        )
        .await
        .unwrap();
    let message = missing.value().unwrap().as_str().unwrap().to_owned();
    assert!(message.contains("toolweave-no-such-server"), "{message}");

    let remote = server
        .execute(
            "try { await tools.remote.anything({}); return 'no error' } catch (e) { return String(e) }",
            "typescript",
        )
        .await
        .unwrap();
    let message = remote.value().unwrap().as_str().unwrap().to_owned();
    assert!(message.contains("server \"remote\""), "{message}");
    assert!(message.contains("the connection was refused"), "{message}");

    // A crash mid-call is reported with the exit and stderr; the other server is unaffected.
    let crashed = server
        .execute(
            "try { await tools.good.crash({}); return 'no error' } catch (e) { return String(e) }",
            "typescript",
        )
        .await
        .unwrap();
    let message = crashed.value().unwrap().as_str().unwrap().to_owned();
    assert!(message.contains("good"), "{message}");
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_does_not_wait_for_slow_upstreams() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture_binary();
    let config = write_config(
        dir.path(),
        json!({ "slow": { "command": fixture, "args": ["--start-delay-ms", "4000"] } }),
    );
    let started = Instant::now();
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    let tools = server.list_tools().await.unwrap();
    // Behaviour, not speed: the answer comes long before the upstream could have started.
    assert!(
        started.elapsed() < Duration::from_millis(3000),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(tools.len(), 3);
    // A call waits for the server to come up and then succeeds.
    let sum = server
        .execute("await tools.slow.add({ a: 2, b: 3 })", "typescript")
        .await
        .unwrap();
    assert_eq!(sum.value().unwrap(), &json!("5"));
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_call_times_out_and_others_continue() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture_binary();
    let config = write_config(dir.path(), json!({ "fixture": { "command": fixture } }));
    let server = Toolweave::start(toolweave(), &config, &["--tool-timeout-ms", "300"])
        .await
        .unwrap();
    let code = r#"
        const [slow, fast] = await Promise.allSettled([
          tools.fixture.slow({ ms: 5000 }),
          tools.fixture.add({ a: 1, b: 2 }),
        ]);
        return { slow: slow.status, reason: String(slow.reason), fast: fast.value };
    "#;
    let result = server.execute(code, "typescript").await.unwrap();
    let value = result.value().unwrap();
    assert_eq!(value["slow"], "rejected");
    assert_eq!(value["fast"], "3");
    assert!(value["reason"].as_str().unwrap().contains("300"), "{value}");
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_too_large_is_named_at_once_and_the_server_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture_binary();
    let config = write_config(
        dir.path(),
        json!({
            "fixture": { "command": fixture },
            "other": { "command": fixture, "args": ["--name", "other"] },
        }),
    );
    // The tool timeout is far beyond the bound below, so an error that waited for it shows,
    // however loaded the machine (reading 64 MiB takes a second or two).
    let server = Toolweave::start(toolweave(), &config, &["--tool-timeout-ms", "120000"])
        .await
        .unwrap();
    // 64 MiB of text, plus the JSON-RPC framing: one line longer than toolweave accepts.
    let code = r#"
        const [large, other] = await Promise.allSettled([
          tools.fixture.large({ bytes: 64 * 1024 * 1024 }),
          tools.other.add({ a: 1, b: 2 }),
        ]);
        return { reason: String(large.reason), other: other.value };
    "#;
    let started = Instant::now();
    let result = server.execute(code, "javascript").await.unwrap();
    let value = result.value().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the error should come when the answer does, not at the tool timeout"
    );
    let reason = value["reason"].as_str().unwrap();
    assert!(reason.contains("longer than 64 MiB"), "{reason}");
    assert!(reason.contains("ask the tool for less"), "{reason}");
    assert_eq!(value["other"], "3", "the other server is unaffected");

    // The server is started again on a later call.
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        let result = server
            .execute(
                "return await tools.fixture.add({ a: 2, b: 3 })",
                "javascript",
            )
            .await
            .unwrap();
        if !result.is_error {
            assert_eq!(result.value().unwrap(), &json!("5"));
            break;
        }
        assert!(Instant::now() < until, "not started again: {}", result.text);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    server.stop().await.unwrap();
}

/// Every fault the fixture can play, at once, next to a healthy server: each failure names its
/// server and its cause, and the healthy server answers before, between and after them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_fault_is_named_and_a_healthy_server_is_unaffected() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture_binary();
    let config = write_config(
        dir.path(),
        json!({
            "healthy": { "command": fixture, "args": ["--name", "healthy"] },
            "failstart": { "command": fixture, "args": ["--fail-start"] },
            "crasher": { "command": fixture, "args": ["--name", "crasher"] },
            "hanger": { "command": fixture },
            "garbage": { "command": fixture, "args": ["--stdout-garbage", "only"] },
            "banner": { "command": fixture, "args": ["--stdout-garbage", "banner"] },
            "sluggish": { "command": fixture, "args": ["--start-delay-ms", "20000"] },
            "quitter": { "command": fixture, "args": ["--name", "quitter", "--exit-after-calls", "2"] },
        }),
    );
    let started = Instant::now();
    let server = Toolweave::start(
        toolweave(),
        &config,
        // Long enough for the healthy servers on a busy machine, short enough to wait out.
        &["--startup-timeout-ms", "3000", "--tool-timeout-ms", "1000"],
    )
    .await
    .unwrap();

    // All at once: the failures settle while the healthy calls answer.
    let code = r#"
        const calls = {
          healthyFirst: tools.healthy.add({ a: 1, b: 2 }),
          failstart: tools.failstart.add({ a: 1, b: 1 }),
          crasher: tools.crasher.crash({}),
          hanger: tools.hanger.slow({ ms: 20000 }),
          garbage: tools.garbage.add({ a: 1, b: 1 }),
          banner: tools.banner.add({ a: 2, b: 3 }),
          sluggish: tools.sluggish.add({ a: 1, b: 1 }),
          // Two calls answered, and the third finds the server exiting or gone.
          quitter: (async () => {
            const answers = [];
            for (const message of ["one", "two", "three"]) {
              answers.push(await tools.quitter.echo({ message }).catch((e) => String(e)));
            }
            return answers;
          })(),
          healthyEcho: tools.healthy.echo({ message: "between" }),
        };
        const names = Object.keys(calls);
        const settled = await Promise.allSettled(Object.values(calls));
        const out = {};
        names.forEach((name, index) => {
          const result = settled[index];
          out[name] = result.status === "fulfilled" ? { value: result.value } : { error: String(result.reason) };
        });
        out.healthyAfter = await tools.healthy.whoami({});
        return out;
    "#;
    let result = server.execute(code, "javascript").await.unwrap();
    let value = result.value().unwrap().clone();
    let error = |name: &str| -> String {
        value[name]["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{name} did not fail: {value}"))
            .to_owned()
    };
    let has = |name: &str, parts: &[&str]| {
        let message = error(name);
        for part in parts {
            assert!(
                message.contains(part),
                "{name}: {part:?} is missing from {message}"
            );
        }
        message
    };
    assert_eq!(value["healthyFirst"]["value"], "3", "{value}");
    assert_eq!(value["healthyEcho"]["value"], "between", "{value}");
    assert_eq!(value["healthyAfter"], "healthy", "{value}");
    has(
        "failstart",
        &[
            "server \"failstart\"",
            "exited during startup",
            "failing on purpose",
        ],
    );
    has(
        "crasher",
        &[
            "server \"crasher\"",
            "exit status: 3",
            "crashing on purpose",
        ],
    );
    has(
        "hanger",
        &[
            "server \"hanger\"",
            "\"slow\" within 1000 ms (--tool-timeout-ms)",
        ],
    );
    has(
        "garbage",
        &[
            "server \"garbage\"",
            "within 3000 ms (--startup-timeout-ms)",
            "its stdout had lines that are not MCP messages",
            "\"Listening on port 3000\"",
            "must write its logs to stderr",
        ],
    );
    let sluggish = has(
        "sluggish",
        &[
            "server \"sluggish\"",
            "within 3000 ms (--startup-timeout-ms)",
        ],
    );
    assert!(!sluggish.contains("stdout"), "{sluggish}");
    // A banner before MCP is skipped: the server works.
    assert_eq!(value["banner"]["value"], "5", "{value}");
    let quitter = &value["quitter"]["value"];
    assert_eq!(quitter[0], "one", "{value}");
    assert_eq!(quitter[1], "two", "{value}");
    let message = quitter[2].as_str().unwrap();
    for part in [
        "server \"quitter\" exited (exit status: 0)",
        "toolweave starts it again on a later call",
        "exiting after 2 calls",
    ] {
        assert!(message.contains(part), "{part:?} is missing from {message}");
    }

    // After its restart delay (1 s after a first crash) the server is started again on a call.
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let result = server
            .execute("return await tools.quitter.whoami({})", "javascript")
            .await
            .unwrap();
        if !result.is_error {
            assert_eq!(result.value().unwrap(), &json!("quitter"));
            break;
        }
        assert!(Instant::now() < until, "not started again: {}", result.text);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let healthy = server
        .execute(
            "return await tools.healthy.add({ a: 1, b: 1 })",
            "javascript",
        )
        .await
        .unwrap();
    assert_eq!(healthy.value().unwrap(), &json!("2"));
    server.stop().await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}
