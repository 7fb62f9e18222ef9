//! Shared helpers for the catalog tests.

mod declarations;
mod findings;
mod names;
mod python;
mod real_servers;
mod rebuild;
mod schema_features;
mod search;
mod search_corpus;

use serde_json::Value;
use toolweave_catalog::{Annotations, Catalog, ToolDefinition, ToolSchema};

/// The tools of one real server, as saved from its `tools/list` answer, under `server`.
pub fn saved_tools(file: &str, server: &str) -> Vec<ToolDefinition> {
    let path = format!("{}/tests/schemas/{file}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
    let tools: Vec<Value> =
        serde_json::from_str(&text).unwrap_or_else(|error| panic!("{path}: {error}"));
    tools
        .into_iter()
        .map(|tool| ToolDefinition {
            server: server.to_owned(),
            name: tool["name"].as_str().unwrap_or_default().to_owned(),
            title: tool["title"].as_str().map(str::to_owned),
            description: tool["description"].as_str().map(str::to_owned),
            input_schema: schema(&tool["inputSchema"]),
            output_schema: tool.get("outputSchema").map(schema),
            annotations: tool.get("annotations").map(|hints| Annotations {
                title: hints["title"].as_str().map(str::to_owned),
                read_only: hints["readOnlyHint"].as_bool(),
                destructive: hints["destructiveHint"].as_bool(),
                idempotent: hints["idempotentHint"].as_bool(),
                open_world: hints["openWorldHint"].as_bool(),
            }),
            app_only: ToolDefinition::app_only_meta(tool.get("_meta").and_then(Value::as_object)),
        })
        .collect()
}

/// A tool on server `fixture` with this name and input schema.
pub fn tool(name: &str, input_schema: Value) -> ToolDefinition {
    ToolDefinition {
        server: "fixture".to_owned(),
        name: name.to_owned(),
        title: None,
        description: None,
        input_schema: schema(&input_schema),
        output_schema: None,
        annotations: None,
        app_only: false,
    }
}

/// A schema as the catalog keeps it.
pub fn schema(value: &Value) -> ToolSchema {
    ToolSchema::from_value(value).unwrap_or_else(|error| panic!("{value}: {error}"))
}

/// A catalog of one server, `fixture`, with these tools.
pub fn fixture(tools: Vec<ToolDefinition>) -> Catalog {
    Catalog::new(&["fixture".to_owned()], tools)
}
