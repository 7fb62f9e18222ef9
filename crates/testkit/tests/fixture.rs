//! The fixture server, spawned as the built binary and driven by an rmcp client.
//!
//! Besides checking the fixture, this test makes `cargo test` build `toolweave-fixture` into
//! `target/<profile>/`, where the tests of other packages find it.

#![allow(
    clippy::too_many_lines,
    reason = "a test reads top to bottom as one scenario"
)]

use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use toolweave_testkit::fixture::{STDOUT_GARBAGE, TINY_PNG_BASE64};

async fn spawn(args: &[&str]) -> anyhow::Result<RunningService<RoleClient, ()>> {
    let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolweave-fixture")).configure(
        |command| {
            command.args(args).env("FIXTURE_SECRET", "from-test");
        },
    );
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::inherit())
        .spawn()?;
    Ok(().serve(transport).await?)
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    arguments: Value,
) -> anyhow::Result<CallToolResult> {
    let Value::Object(arguments) = arguments else {
        anyhow::bail!("arguments must be an object");
    };
    Ok(client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await?)
}

fn text(result: &CallToolResult) -> &str {
    result.content[0]
        .as_text()
        .map(|text| text.text.as_str())
        .unwrap_or_default()
}

#[tokio::test]
async fn lists_the_known_tools_and_answers_calls() {
    let client = spawn(&["--name", "alpha"]).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "add",
            "get-sum",
            "echo",
            "whoami",
            "env",
            "slow",
            "fail",
            "structured",
            "image",
            "large",
            "dotted.name",
            "dash-name",
            "crash",
            "register",
            "remove",
            "stats",
            "keep",
            "ask",
            "sample",
            "roots",
            "capabilities"
        ]
    );
    assert_eq!(
        tools[0].description.as_deref(),
        Some("Add two numbers and return their sum.")
    );
    assert_eq!(tools[0].input_schema["required"], json!(["a", "b"]));

    assert_eq!(
        text(
            &call(&client, "add", json!({ "a": 2, "b": 5 }))
                .await
                .unwrap()
        ),
        "7"
    );
    assert_eq!(
        text(
            &call(&client, "get-sum", json!({ "a": 1.5, "b": 1 }))
                .await
                .unwrap()
        ),
        "2.5"
    );
    assert_eq!(
        text(&call(&client, "whoami", json!({})).await.unwrap()),
        "alpha"
    );
    assert_eq!(
        text(
            &call(&client, "echo", json!({ "message": "hi" }))
                .await
                .unwrap()
        ),
        "hi"
    );
    assert_eq!(
        text(
            &call(&client, "env", json!({ "name": "FIXTURE_SECRET" }))
                .await
                .unwrap()
        ),
        "from-test"
    );
    assert_eq!(
        text(
            &call(&client, "env", json!({ "name": "FIXTURE_UNSET_VARIABLE" }))
                .await
                .unwrap()
        ),
        ""
    );
    assert_eq!(
        text(&call(&client, "slow", json!({ "ms": 10 })).await.unwrap()),
        "done"
    );
    assert_eq!(
        text(
            &call(&client, "large", json!({ "bytes": 1000 }))
                .await
                .unwrap()
        )
        .len(),
        1000
    );
    assert_eq!(
        text(&call(&client, "dotted.name", json!({})).await.unwrap()),
        "dotted.name"
    );
    assert_eq!(
        text(&call(&client, "dash-name", json!({})).await.unwrap()),
        "dash-name"
    );

    let failed = call(&client, "fail", json!({ "message": "disk on fire" }))
        .await
        .unwrap();
    assert_eq!(failed.is_error, Some(true));
    assert_eq!(text(&failed), "disk on fire");

    let weather = call(&client, "structured", json!({ "city": "Oslo" }))
        .await
        .unwrap();
    let structured = weather.structured_content.clone().unwrap();
    assert_eq!(structured["city"], "Oslo");
    assert!(structured["temperature"].is_number());
    assert!(structured["conditions"].is_string());
    assert_eq!(
        serde_json::from_str::<Value>(text(&weather)).unwrap(),
        structured
    );
    let again = call(&client, "structured", json!({ "city": "Oslo" }))
        .await
        .unwrap();
    assert_eq!(again.structured_content, Some(structured));

    let image = call(&client, "image", json!({})).await.unwrap();
    let image = serde_json::to_value(&image.content[0]).unwrap();
    assert_eq!(
        image,
        json!({ "type": "image", "data": TINY_PNG_BASE64, "mimeType": "image/png" })
    );

    let error = client
        .call_tool(CallToolRequestParams::new("add").with_arguments(serde_json::Map::new()))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("\"a\" is required"), "{error}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn pages_tools_and_announces_new_ones() {
    let client = spawn(&["--page-size", "4"]).await.unwrap();
    let first = client.list_tools(None).await.unwrap();
    assert_eq!(first.tools.len(), 4);
    assert_eq!(first.next_cursor.as_deref(), Some("4"));
    assert_eq!(client.list_all_tools().await.unwrap().len(), 21);

    assert_eq!(
        text(
            &call(&client, "register", json!({ "name": "late" }))
                .await
                .unwrap()
        ),
        "registered late"
    );
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 22);
    assert_eq!(
        text(&call(&client, "late", json!({})).await.unwrap()),
        "late"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn fail_start_and_crash_exit_with_stderr() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolweave-fixture"))
        .arg("--fail-start")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).trim(),
        "failing on purpose"
    );

    let client = spawn(&["--name", "doomed"]).await.unwrap();
    let error = client
        .call_tool(CallToolRequestParams::new("crash"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, rmcp::ServiceError::TransportClosed),
        "{error}"
    );
}

#[tokio::test]
async fn stdout_garbage_before_mcp_or_instead_of_it() {
    // `only`: the lines and nothing else on stdout; it exits when stdin closes.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolweave-fixture"))
        .args(["--stdout-garbage", "only"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let expected: String = STDOUT_GARBAGE
        .iter()
        .map(|line| format!("{line}\n"))
        .collect();
    assert_eq!(String::from_utf8_lossy(&output.stdout), expected);

    // `banner`: the lines, then MCP (rmcp's client skips lines that are not JSON).
    let client = spawn(&["--stdout-garbage", "banner"]).await.unwrap();
    let sum = call(&client, "add", json!({ "a": 2, "b": 3 }))
        .await
        .unwrap();
    assert_eq!(text(&sum), "5");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn exit_after_calls_answers_that_many_then_exits() {
    let client = spawn(&["--exit-after-calls", "2"]).await.unwrap();
    for message in ["one", "two"] {
        let answer = call(&client, "echo", json!({ "message": message }))
            .await
            .unwrap();
        assert_eq!(text(&answer), message);
    }
    let error = call(&client, "echo", json!({ "message": "three" }))
        .await
        .unwrap_err();
    let error = error.downcast::<rmcp::ServiceError>().unwrap();
    assert!(
        matches!(error, rmcp::ServiceError::TransportClosed),
        "{error}"
    );
}
