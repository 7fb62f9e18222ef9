//! Ranked search.

use serde_json::json;
use toolweave_catalog::{Catalog, ToolDefinition};

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
        "read file contents",
        "send an email to my boss",
        "get the current time",
        "create entities in the knowledge graph",
    ];
    let text: Vec<String> = queries
        .iter()
        .map(|query| format!("{query}: {}", marked(&catalog, query, 3).join(", ")))
        .collect();
    insta::assert_snapshot!(text.join("\n"));
}

/// The top hits with what the answer says of them: `(weak)`, `(deprecated)`.
fn marked(catalog: &Catalog, query: &str, limit: usize) -> Vec<String> {
    catalog
        .search(query, limit)
        .iter()
        .map(|hit| {
            let entry = &catalog.entries()[hit.entry];
            let mut name = entry.guest_name();
            if hit.weak {
                name.push_str(" (weak)");
            }
            if entry.deprecated() {
                name.push_str(" (deprecated)");
            }
            name
        })
        .collect()
}

/// filesystem's `read_file` says "DEPRECATED: Use read_text_file instead.": the tools that
/// replace it come first, and it is still found, marked, by its name.
#[test]
fn deprecated_tools_come_after_the_tools_that_replace_them() {
    let catalog = real_catalog();
    let found = top(&catalog, "read file contents", 8);
    let position = |name: &str| found.iter().position(|found| found == name);
    assert!(
        position("filesystem.read_text_file") < position("filesystem.read_file"),
        "{found:?}"
    );
    assert_eq!(top(&catalog, "read_file", 1), ["filesystem.read_file"]);
    let read_file = catalog.resolve("filesystem.read_file").unwrap();
    assert!(read_file.deprecated());
    assert!(
        !catalog
            .resolve("filesystem.read_text_file")
            .unwrap()
            .deprecated()
    );
}

/// What counts as saying a tool is deprecated, and what does not.
#[test]
fn deprecation_is_read_from_the_title_and_the_description() {
    let deprecated = |title: Option<&str>, description: &str| {
        let mut tool = tool("t", json!({}));
        tool.title = title.map(str::to_owned);
        tool.description = Some(description.to_owned());
        fixture(vec![tool]).entries()[0].deprecated()
    };
    assert!(deprecated(
        None,
        "Reads a file. DEPRECATED: use read_text_file."
    ));
    assert!(deprecated(None, "Deprecated: use list_items instead."));
    assert!(deprecated(None, "[Deprecated] Old search."));
    assert!(deprecated(
        None,
        "Old search. This tool is deprecated and will be removed."
    ));
    assert!(deprecated(Some("Read File (Deprecated)"), "Reads a file."));
    assert!(!deprecated(
        None,
        "Lists items. The `page` parameter is deprecated; use `cursor`."
    ));
    assert!(!deprecated(Some("Undeprecated things"), "Lists items."));
}

/// A query that no tool answers gets its closest tools marked weak; one a tool answers does
/// not, nor does an exact name or an empty query.
#[test]
fn weak_matches_are_marked() {
    let catalog = real_catalog();
    let hits = catalog.search("send an email to my boss", 8);
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|hit| hit.weak), "{hits:?}");
    let hits = catalog.search("create entities in the knowledge graph", 3);
    assert_eq!(
        catalog.entries()[hits[0].entry].guest_name(),
        "memory.create_entities"
    );
    assert!(!hits[0].weak);
    assert!(!catalog.search("get_sum", 1)[0].weak);
    assert!(catalog.search("", 5).iter().all(|hit| !hit.weak));
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
    let tools: Vec<ToolDefinition> = (0..1000)
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

/// Two servers of the same tools, one of which says what it is for: words only its
/// instructions have find its tools and no other's; a catalog rebuilt after the instructions
/// changed finds them by the new words, not the old (what a tool's terms were is not reused
/// when its server's instructions changed).
#[test]
fn a_server_s_instructions_find_its_tools() {
    use std::collections::HashMap;
    use toolweave_catalog::GuestNames;

    let servers = vec!["alpha".to_owned(), "beta".to_owned()];
    let tools = || {
        saved_tools("everything", "alpha")
            .into_iter()
            .chain(saved_tools("everything", "beta"))
            .collect::<Vec<_>>()
    };
    let said = |text: &str| HashMap::from([("alpha".to_owned(), text.to_owned())]);
    let servers_of = |catalog: &Catalog, query: &str| {
        let mut found: Vec<String> = top(catalog, query, 8)
            .into_iter()
            .map(|name| name.split('.').next().unwrap_or_default().to_owned())
            .collect();
        found.dedup();
        found
    };
    let plain = Catalog::new(&servers, tools());
    assert!(top(&plain, "currencies yen", 8).is_empty());

    let catalog = Catalog::with_instructions(
        &servers,
        tools(),
        said("This server converts currencies: yen, euros and pounds."),
    );
    assert_eq!(servers_of(&catalog, "currencies yen"), ["alpha"]);
    // Below what a tool says itself: the adders come first, from either server.
    let adders = top(&catalog, "add two numbers", 2);
    assert!(
        adders.iter().all(|name| name.ends_with(".get_sum")),
        "{adders:?}"
    );

    let listed = tools();
    let names = GuestNames::assign(
        &servers,
        listed
            .iter()
            .map(|tool| (tool.server.as_str(), tool.name.as_str())),
    );
    let changed = Catalog::named(
        &servers,
        tools(),
        &names,
        said("This server reads the tides of harbours."),
        Some(&catalog),
    );
    assert!(top(&changed, "currencies yen", 8).is_empty());
    assert_eq!(servers_of(&changed, "harbour tides"), ["alpha"]);
}
