//! A catalog rebuilt from the previous one after a server's tools change is the catalog built
//! from nothing: the same entries, names, search ranking and suggestions.

use toolweave_catalog::{Catalog, ToolDefinition};

use super::saved_tools;

const QUERIES: [&str; 8] = [
    "read file",
    "list directory",
    "add two numbers",
    "create entities relations",
    "serch",
    "edit",
    "memory graph",
    "",
];

fn servers() -> Vec<String> {
    ["filesystem", "memory", "everything"]
        .map(str::to_owned)
        .to_vec()
}

fn all_tools() -> Vec<ToolDefinition> {
    ["filesystem", "memory", "everything"]
        .iter()
        .flat_map(|server| saved_tools(server, server))
        .collect()
}

fn assert_same(rebuilt: &Catalog, fresh: &Catalog, step: &str) {
    assert_eq!(rebuilt.entries(), fresh.entries(), "{step}: entries");
    for query in QUERIES {
        assert_eq!(
            rebuilt.search(query, 20),
            fresh.search(query, 20),
            "{step}: search {query:?}"
        );
    }
    for name in [
        "filesystem.read_file",
        "memory.serch_nodes",
        "everything.ad",
    ] {
        assert_eq!(
            rebuilt.resolve(name).map(|entry| &entry.tool),
            fresh.resolve(name).map(|entry| &entry.tool),
            "{step}: resolve {name}"
        );
        assert_eq!(
            rebuilt.suggest(name),
            fresh.suggest(name),
            "{step}: suggest {name}"
        );
    }
    assert_eq!(
        rebuilt.declarations(),
        fresh.declarations(),
        "{step}: declarations"
    );
}

#[test]
fn a_rebuilt_catalog_is_the_catalog_built_from_nothing() {
    let servers = servers();
    let mut tools = all_tools();
    let mut catalog = Catalog::new(&servers, tools.clone());

    // A description changes: that tool's terms change, and with them every tool's scores.
    let position = tools
        .iter()
        .position(|tool| tool.name == "read_text_file")
        .expect("the filesystem server has read_text_file");
    tools[position].description = Some("Read a document, the serch index, graph nodes".into());
    let rebuilt = catalog.rebuilt(&servers, tools.clone());
    assert_same(
        &rebuilt,
        &Catalog::new(&servers, tools.clone()),
        "description",
    );
    catalog = rebuilt;

    // A server's tools go (it stopped), then come back.
    let without: Vec<ToolDefinition> = tools
        .iter()
        .filter(|tool| tool.server != "memory")
        .cloned()
        .collect();
    let rebuilt = catalog.rebuilt(&servers, without.clone());
    assert_same(&rebuilt, &Catalog::new(&servers, without), "server gone");
    let rebuilt = rebuilt.rebuilt(&servers, tools.clone());
    assert_same(
        &rebuilt,
        &Catalog::new(&servers, tools.clone()),
        "server back",
    );

    // A tool is added whose name clashes after sanitising, so another tool's guest name moves.
    let mut clash = tools[position].clone();
    clash.name = "read-text-file".into();
    tools.push(clash);
    let rebuilt = catalog.rebuilt(&servers, tools.clone());
    assert_same(
        &rebuilt,
        &Catalog::new(&servers, tools.clone()),
        "guest names",
    );

    // The servers are configured in another order: every namespace moves.
    let mut reordered = servers.clone();
    reordered.reverse();
    let rebuilt = rebuilt.rebuilt(&reordered, tools.clone());
    assert_same(&rebuilt, &Catalog::new(&reordered, tools), "server order");
}
