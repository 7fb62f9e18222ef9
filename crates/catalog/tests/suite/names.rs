//! Guest names, name resolution and suggestions.

use serde_json::json;
use toolweave_catalog::{Catalog, ToolDefinition};

use super::{fixture, tool};

fn on(server: &str, name: &str) -> ToolDefinition {
    ToolDefinition {
        server: server.to_owned(),
        ..tool(name, json!({"type": "object"}))
    }
}

fn guest_names(catalog: &Catalog) -> Vec<(String, String)> {
    catalog
        .entries()
        .iter()
        .map(|entry| (entry.tool.clone(), entry.guest_name()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(left, right)| ((*left).to_owned(), (*right).to_owned()))
        .collect()
}

#[test]
fn names_are_sanitized_identifiers() {
    let catalog = Catalog::new(
        &["everything".to_owned()],
        vec![
            on("everything", "get-sum"),
            on("everything", "dotted.name"),
            on("everything", "2fa"),
            on("everything", "delete"),
            on("everything", "then"),
            on("everything", "raw"),
            on("everything", "__proto__"),
            on("everything", "from"),
            on("everything", "naïve"),
        ],
    );
    assert_eq!(
        guest_names(&catalog),
        pairs(&[
            ("get-sum", "everything.get_sum"),
            ("dotted.name", "everything.dotted_name"),
            ("2fa", "everything._2fa"),
            ("delete", "everything.delete_"),
            ("then", "everything.then_"),
            ("raw", "everything.raw_"),
            ("__proto__", "everything.__proto___"),
            ("from", "everything.from_"),
            ("naïve", "everything.na_ve"),
        ])
    );
}

#[test]
fn collisions_resolve_the_same_in_any_order() {
    let names = ["get-sum", "get_sum", "get.sum", "get_sum_2"];
    let forward = fixture(names.iter().map(|name| tool(name, json!({}))).collect());
    let backward = fixture(
        names
            .iter()
            .rev()
            .map(|name| tool(name, json!({})))
            .collect(),
    );
    let mut forward_names = guest_names(&forward);
    let mut backward_names = guest_names(&backward);
    forward_names.sort();
    backward_names.sort();
    assert_eq!(forward_names, backward_names);
    assert_eq!(
        forward_names,
        pairs(&[
            ("get-sum", "fixture.get_sum_3"),
            ("get.sum", "fixture.get_sum_4"),
            ("get_sum", "fixture.get_sum"),
            ("get_sum_2", "fixture.get_sum_2"),
        ])
    );
}

#[test]
fn server_namespaces_are_unique_and_keep_configured_order() {
    let servers: Vec<String> = ["my-server", "my_server", "class", "9lives", "idle"]
        .iter()
        .map(|name| (*name).to_owned())
        .collect();
    let catalog = Catalog::new(&servers, vec![on("my-server", "x"), on("unlisted", "y")]);
    let namespaces: Vec<(&str, &str)> = catalog.namespaces().collect();
    assert_eq!(
        namespaces,
        [
            ("my_server_2", "my-server"),
            ("my_server", "my_server"),
            ("class_", "class"),
            ("_9lives", "9lives"),
            ("idle", "idle"),
            ("unlisted", "unlisted"),
        ]
    );
    assert_eq!(
        guest_names(&catalog),
        pairs(&[("x", "my_server_2.x"), ("y", "unlisted.y")])
    );
}

#[test]
fn entries_group_by_configured_server_order_and_drop_duplicates() {
    let servers = vec!["b".to_owned(), "a".to_owned()];
    let mut second = on("a", "one");
    second.description = Some("a second tool with the same name".to_owned());
    let catalog = Catalog::new(
        &servers,
        vec![on("a", "one"), on("b", "two"), second, on("a", "three")],
    );
    assert_eq!(
        guest_names(&catalog),
        pairs(&[("two", "b.two"), ("one", "a.one"), ("three", "a.three")])
    );
    assert_eq!(catalog.entries()[1].description, None);
}

fn resolved(catalog: &Catalog, name: &str) -> Option<String> {
    catalog.resolve(name).map(|entry| entry.guest_name())
}

#[test]
fn resolves_every_name_form() {
    let servers = vec!["fixture".to_owned(), "my-server".to_owned()];
    let catalog = Catalog::new(
        &servers,
        vec![
            on("fixture", "add"),
            on("fixture", "get-sum"),
            on("fixture", "dotted.name"),
            on("my-server", "do-it"),
        ],
    );
    let expected = [
        ("fixture.add", Some("fixture.add")),
        ("tools.fixture.add", Some("fixture.add")),
        ("  fixture.add ", Some("fixture.add")),
        ("fixture.get_sum", Some("fixture.get_sum")),
        ("mcp__fixture__get-sum", Some("fixture.get_sum")),
        ("mcp__fixture__dotted.name", Some("fixture.dotted_name")),
        ("mcp__fixture__get_sum", Some("fixture.get_sum")),
        ("mcp__my-server__do-it", Some("my_server.do_it")),
        ("mcp__my_server__do_it", Some("my_server.do_it")),
        ("fixture.get-sum", Some("fixture.get_sum")),
        ("fixture.dotted.name", Some("fixture.dotted_name")),
        ("my-server.do-it", Some("my_server.do_it")),
        ("my_server.do-it", Some("my_server.do_it")),
        ("tools.my_server.do_it", Some("my_server.do_it")),
        ("fixture.nope", None),
        ("fixture", None),
        ("", None),
        ("mcp__fixture", None),
        ("mcp__nobody__add", None),
    ];
    for (name, want) in expected {
        assert_eq!(resolved(&catalog, name).as_deref(), want, "{name:?}");
    }
}

#[test]
fn a_server_named_like_a_prefix_still_resolves() {
    let servers = vec!["tools".to_owned(), "mcp".to_owned()];
    let catalog = Catalog::new(&servers, vec![on("tools", "x"), on("mcp", "y")]);
    assert_eq!(resolved(&catalog, "tools.x").as_deref(), Some("tools.x"));
    assert_eq!(
        resolved(&catalog, "tools.tools.x").as_deref(),
        Some("tools.x")
    );
    assert_eq!(resolved(&catalog, "mcp.y").as_deref(), Some("mcp.y"));
    assert_eq!(resolved(&catalog, "mcp__mcp__y").as_deref(), Some("mcp.y"));
}

#[test]
fn suggests_close_names() {
    let servers = vec!["fixture".to_owned(), "other".to_owned()];
    let catalog = Catalog::new(
        &servers,
        vec![
            on("fixture", "add"),
            on("fixture", "get-sum"),
            on("fixture", "echo"),
            on("other", "add"),
            on("other", "list_files"),
        ],
    );
    assert_eq!(
        catalog.suggest("mcp__fixture__ad"),
        ["fixture.add", "other.add"]
    );
    assert_eq!(catalog.suggest("fixture.ad"), ["fixture.add", "other.add"]);
    assert_eq!(catalog.suggest("other.ad"), ["other.add", "fixture.add"]);
    assert_eq!(catalog.suggest("fixture.getsum"), ["fixture.get_sum"]);
    assert_eq!(catalog.suggest("sum"), ["fixture.get_sum"]);
    assert_eq!(
        catalog.suggest("tools.other.files_list"),
        ["other.list_files"]
    );
    assert_eq!(catalog.suggest("fixture.ehco"), ["fixture.echo"]);
    assert!(catalog.suggest("fixture.completely_unrelated").is_empty());
    assert!(catalog.suggest("").is_empty());
}

/// A name longer than any tool's is not compared with the tools: it gets no suggestions.
#[test]
fn a_huge_name_gets_no_suggestions() {
    let servers = vec!["fixture".to_owned()];
    let catalog = Catalog::new(&servers, vec![on("fixture", "add"), on("fixture", "echo")]);
    let huge = "fixture.add".to_owned() + &"d".repeat(toolweave_catalog::MAX_NAME_BYTES);
    assert!(catalog.suggest(&huge).is_empty());
    // One at the bound is still compared: it contains `add`.
    let longest = "fixture.add".to_owned() + &"d".repeat(toolweave_catalog::MAX_NAME_BYTES - 11);
    assert_eq!(catalog.suggest(&longest), ["fixture.add"]);
}

/// Every tool of a catalog of hundreds, over servers whose guest and configured names differ and
/// tools whose guest and upstream names differ, resolves by each of its names, and names that
/// are not there resolve to nothing.
#[test]
fn every_tool_of_a_large_catalog_resolves_by_each_of_its_names() {
    let servers = ["my-server", "files", "a.b", "zeta"];
    let mut tools = Vec::new();
    for (server_index, server) in servers.iter().enumerate() {
        for index in 0..150 {
            // Upstream names in no particular order, some with characters guest names replace.
            let name = match (index + server_index) % 3 {
                0 => format!("get-item-{index}"),
                1 => format!("item.{}", 1000 - index),
                _ => format!("Zz_{index}_list"),
            };
            tools.push(on(server, &name));
        }
    }
    let catalog = Catalog::new(
        &servers
            .iter()
            .map(|server| (*server).to_owned())
            .collect::<Vec<_>>(),
        tools,
    );
    assert_eq!(catalog.entries().len(), 600);
    for entry in catalog.entries() {
        let forms = [
            entry.guest_name(),
            format!("tools.{}", entry.guest_name()),
            format!("mcp__{}__{}", entry.server, entry.tool),
        ];
        for form in forms {
            let found = catalog
                .resolve(&form)
                .unwrap_or_else(|| panic!("{form} did not resolve"));
            assert_eq!(
                (&found.server, &found.tool),
                (&entry.server, &entry.tool),
                "{form}"
            );
        }
    }
    for missing in [
        "my_server.get_item_1000",
        "files.nothing",
        "mcp__zeta__get-item-999",
        "",
        "a.b",
    ] {
        assert!(catalog.resolve(missing).is_none(), "{missing} resolved");
    }
}
