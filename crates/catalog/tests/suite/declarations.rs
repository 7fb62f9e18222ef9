//! The whole `.d.ts`: named types shared or renamed across tools, servers without tools.

use serde_json::json;
use toolweave_catalog::{Catalog, ToolDefinition};

use super::tool;

fn on(server: &str, name: &str, input: serde_json::Value) -> ToolDefinition {
    ToolDefinition {
        server: server.to_owned(),
        ..tool(name, input)
    }
}

#[test]
fn named_types_are_shared_or_renamed_across_tools() {
    let address = json!({
        "type": "object",
        "properties": {"home": {"$ref": "#/$defs/Address"}},
        "$defs": {"Address": {"type": "object", "properties": {"street": {"type": "string"}}}}
    });
    let other_address = json!({
        "type": "object",
        "properties": {"work": {"$ref": "#/$defs/Address"}},
        "$defs": {"Address": {"type": "string", "description": "One line"}}
    });
    let servers: Vec<String> = ["shop", "my-server", "starting"]
        .iter()
        .map(|name| (*name).to_owned())
        .collect();
    let catalog = Catalog::new(
        &servers,
        vec![
            on("shop", "ship", address.clone()),
            on("shop", "bill", address),
            on("my-server", "visit", other_address),
        ],
    );
    let text = catalog.declarations();
    let start = text.find("type Address").unwrap_or(0);
    let end = text.find("\n/**\n * Calls a tool").unwrap_or(text.len());
    insta::assert_snapshot!(&text[start..end]);
}
