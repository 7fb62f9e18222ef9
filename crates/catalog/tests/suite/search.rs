//! Ranked search.

use serde_json::json;
use toolweave_catalog::{Catalog, UpstreamTool};

use super::{fixture, saved_tools, tool};

/// Every saved real server in one catalog.
fn real_catalog() -> Catalog {
    let servers: Vec<String> = ["everything", "memory", "filesystem"]
        .iter()
        .map(|name| (*name).to_owned())
        .collect();
    let tools = servers
        .iter()
        .flat_map(|server| saved_tools(server, server))
        .collect();
    Catalog::new(&servers, tools)
}

fn top(catalog: &Catalog, query: &str, limit: usize) -> Vec<String> {
    catalog
        .search(query, limit)
        .iter()
        .map(|hit| catalog.entries()[hit.entry].guest_name())
        .collect()
}

#[test]
fn add_two_numbers_finds_the_adder_of_server_everything() {
    let everything = Catalog::new(
        &["everything".to_owned()],
        saved_tools("everything", "everything"),
    );
    assert_eq!(
        top(&everything, "add two numbers", 1),
        ["everything.get_sum"]
    );
    assert_eq!(
        top(&real_catalog(), "add two numbers", 1),
        ["everything.get_sum"]
    );
}

#[test]
fn add_two_numbers_finds_an_adder_named_add() {
    let mut add = tool(
        "add",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
    );
    add.description = Some("Adds two numbers".to_owned());
    let mut echo = tool(
        "echo",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
    );
    echo.description = Some("Echoes the text back".to_owned());
    let mut get_sum = tool(
        "get-sum",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
    );
    get_sum.description = Some("Returns the sum of two numbers".to_owned());
    let catalog = fixture(vec![echo, get_sum, add]);
    assert_eq!(
        top(&catalog, "add two numbers", 2),
        ["fixture.add", "fixture.get_sum"]
    );
}

#[test]
fn rankings_over_the_real_servers() {
    let catalog = real_catalog();
    let queries = [
        "add two numbers",
        "read a file",
        "write file",
        "list directory",
        "make a folder",
        "remove entity",
        "find files matching a pattern",
        "rename file",
        "knowledge graph relations",
        "environment variables",
        "compress",
        "weather",
        "get_sum",
        "filesystem.read_text_file",
        "serch files",
        "dir",
        "long running",
        "image",
        "zzzz nothing here",
    ];
    let text: Vec<String> = queries
        .iter()
        .map(|query| format!("{query}: {}", top(&catalog, query, 3).join(", ")))
        .collect();
    insta::assert_snapshot!(text.join("\n"));
}

#[test]
fn empty_query_lists_everything_in_catalog_order() {
    let catalog = real_catalog();
    let all = catalog.search("", 1000);
    assert_eq!(all.len(), catalog.entries().len());
    assert!(
        all.iter()
            .enumerate()
            .all(|(index, hit)| hit.entry == index)
    );
    assert_eq!(catalog.search("   ", 2).len(), 2);
    assert_eq!(catalog.search("add", 0).len(), 0);
}

#[test]
fn ties_break_by_catalog_order() {
    let catalog = fixture(vec![tool("beta", json!({})), tool("alpha", json!({}))]);
    let mut twin_a = tool("same", json!({}));
    twin_a.server = "a".to_owned();
    let mut twin_b = tool("same", json!({}));
    twin_b.server = "b".to_owned();
    let twins = Catalog::new(&["b".to_owned(), "a".to_owned()], vec![twin_a, twin_b]);
    assert_eq!(top(&twins, "same", 5), ["b.same", "a.same"]);
    assert!(top(&catalog, "gamma", 5).is_empty());
}

#[test]
fn a_thousand_tools_search_fast() {
    let words = [
        "create", "delete", "list", "get", "update", "search", "send", "read",
    ];
    let things = [
        "issue", "file", "user", "message", "branch", "invoice", "event", "page",
    ];
    let tools: Vec<UpstreamTool> = (0..1000)
        .map(|index| {
            let verb = words[index % words.len()];
            let thing = things[(index / words.len()) % things.len()];
            let mut tool = tool(
                &format!("{verb}_{thing}_{index}"),
                json!({"type": "object", "properties": {"id": {"type": "string", "description": format!("The {thing} id")}}}),
            );
            tool.description = Some(format!("{verb} a {thing} in system number {index}"));
            tool
        })
        .collect();
    let started = std::time::Instant::now();
    let catalog = fixture(tools);
    let built = started.elapsed();
    let started = std::time::Instant::now();
    for _ in 0..20 {
        assert_eq!(catalog.search("create an issue", 10).len(), 10);
    }
    let searched = started.elapsed() / 20;
    // Generous bounds: debug builds on a busy machine.
    assert!(built.as_millis() < 3000, "building took {built:?}");
    assert!(searched.as_millis() < 100, "one search took {searched:?}");
    let first = &catalog.entries()[catalog.search("create an issue", 1)[0].entry];
    assert!(first.tool.starts_with("create_issue_"), "{}", first.tool);
}
