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
    assert_eq!(good.value().unwrap(), &json!(2));

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
    assert_eq!(sum.value().unwrap(), &json!(5));
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
    assert_eq!(value["fast"], 3);
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
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
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
        started.elapsed() < Duration::from_secs(10),
        "the error should come when the answer does, not at a timeout"
    );
    let reason = value["reason"].as_str().unwrap();
    assert!(reason.contains("longer than 64 MiB"), "{reason}");
    assert!(reason.contains("ask the tool for less"), "{reason}");
    assert_eq!(value["other"], 3, "the other server is unaffected");

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
            assert_eq!(result.value().unwrap(), &json!(5));
            break;
        }
        assert!(Instant::now() < until, "not started again: {}", result.text);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    server.stop().await.unwrap();
}
