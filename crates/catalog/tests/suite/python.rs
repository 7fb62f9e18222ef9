//! Python stubs from the same schema walk.

use serde_json::json;
use toolweave_catalog::Catalog;

use super::{fixture, saved_tools, tool};

#[test]
fn memory_and_everything_stubs() {
    let servers: Vec<String> = ["everything", "memory"]
        .iter()
        .map(|name| (*name).to_owned())
        .collect();
    let tools = servers
        .iter()
        .flat_map(|server| saved_tools(server, server))
        .collect();
    insta::assert_snapshot!(Catalog::new(&servers, tools).python_stubs());
}

#[test]
fn one_stub_covers_the_schema_features() {
    let mut everything = tool(
        "do-it",
        json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "description": "How many", "default": 3},
                "mode": {"enum": ["fast", "slow", null]},
                "pair": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "string"}]},
                "shape": {"oneOf": [
                    {"type": "object", "properties": {"radius": {"type": "number"}}, "required": ["radius"]},
                    {"type": "object", "properties": {"side": {"type": "number"}}}
                ]},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "node": {"$ref": "#/$defs/Node"},
                "headers": {"type": "object", "properties": {"x-api-key": {"type": "string"}, "from": {"type": "string"}}}
            },
            "required": ["count"],
            "$defs": {"Node": {"type": "object", "description": "A tree node", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}
        }),
    );
    everything.description = Some("Does it.\nCarefully \"\"\" quoted.".to_owned());
    let catalog = fixture(vec![everything]);
    insta::assert_snapshot!(catalog.python_stub(&catalog.entries()[0]));
}
