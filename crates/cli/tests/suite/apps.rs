//! MCP Apps tools for the server's user interface only (`_meta.ui.visibility: ["app"]`): the
//! model does not see them in search, describe or the declarations, and a call from code is
//! refused with the reason, though the server would answer it.

use serde_json::json;
use toolweave_testkit::harness::Toolweave;

use super::toolweave;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_only_tools_are_hidden_from_the_model_and_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let fixture = json!({"mcpServers": {"viewer": {
        "command": toolweave_testkit::fixture_binary(),
        "args": ["--name", "viewer", "--app-only", "whoami"],
    }}});
    std::fs::write(&config, serde_json::to_vec_pretty(&fixture).unwrap()).unwrap();
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();

    // Search: the tool's own words find nothing of it; the other tools are there.
    let found = server
        .call(
            "search_tools",
            json!({ "query": "return this server's name", "limit": 50 }),
        )
        .await
        .unwrap();
    let structured = found.structured_content.unwrap();
    let names: Vec<&str> = structured["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"viewer.whoami"), "{structured}");
    let all = server
        .call("search_tools", json!({ "query": "", "limit": 50 }))
        .await
        .unwrap();
    let all = all.structured_content.unwrap();
    let listed = all["results"].as_array().unwrap();
    assert!(
        listed.iter().any(|hit| hit["name"] == "viewer.add"),
        "{all}"
    );
    assert!(
        !listed.iter().any(|hit| hit["name"] == "viewer.whoami"),
        "{all}"
    );

    // Describe: by name, it says why; the server's declarations leave it out.
    let described = server
        .call("describe_tools", json!({ "names": ["viewer.whoami"] }))
        .await
        .unwrap();
    let text = &described.content[0].as_text().unwrap().text;
    assert!(
        text.contains("viewer.whoami is for the app only") && !text.contains("no tool named"),
        "{text}"
    );
    let whole = server
        .call("describe_tools", json!({ "names": ["viewer"] }))
        .await
        .unwrap();
    let whole = &whole.content[0].as_text().unwrap().text;
    assert!(
        whole.contains("function add(") && !whole.contains("whoami"),
        "{whole}"
    );

    // A call from code is refused with the reason, in both languages.
    for (code, language) in [
        ("await tools.viewer.whoami({})", "typescript"),
        ("await tools.viewer.whoami()", "python"),
    ] {
        let execution = server.execute(code, language).await.unwrap();
        assert!(execution.is_error, "{language}: {}", execution.text);
        assert!(
            execution.text.contains("viewer.whoami is for the app only")
                && execution.text.contains("_meta.ui.visibility"),
            "{language}: {}",
            execution.text
        );
    }
    server.stop().await.unwrap();
}
