//! Synthetic tools for scale: `toolweave-fixture --tools N` serves N tools with names,
//! descriptions and input schemas shaped like those of real servers (an area, a verb and a noun:
//! `billing_list_invoices`), so catalogs of thousands of tools can be measured.

use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

/// Parts of the names: every combination is one tool, areas varying slowest.
const AREAS: [&str; 50] = [
    "billing",
    "crm",
    "wiki",
    "ci",
    "chat",
    "calendar",
    "mail",
    "drive",
    "tickets",
    "hr",
    "payroll",
    "inventory",
    "shipping",
    "orders",
    "catalog",
    "analytics",
    "ads",
    "seo",
    "cms",
    "forms",
    "surveys",
    "docs",
    "sheets",
    "slides",
    "notes",
    "tasks",
    "boards",
    "sprints",
    "repos",
    "builds",
    "deploys",
    "alerts",
    "logs",
    "metrics",
    "traces",
    "dns",
    "certs",
    "vpn",
    "iam",
    "secrets",
    "backups",
    "storage",
    "queues",
    "cache",
    "search",
    "maps",
    "weather",
    "news",
    "finance",
    "legal",
];
const VERBS: [&str; 10] = [
    "list", "get", "create", "update", "delete", "search", "archive", "export", "assign", "count",
];
const NOUNS: [&str; 20] = [
    "items", "records", "comments", "labels", "owners", "projects", "users", "teams", "files",
    "versions", "reports", "events", "alerts", "notes", "invoices", "contacts", "accounts",
    "rules", "exports", "webhooks",
];

/// The most tools `--tools` serves: one per combination of the name parts.
pub const MAX_SYNTHETIC_TOOLS: usize = AREAS.len() * VERBS.len() * NOUNS.len();

/// The first `count` synthetic tools (at most [`MAX_SYNTHETIC_TOOLS`]).
pub fn synthetic_tools(count: usize) -> Vec<Tool> {
    (0..count.min(MAX_SYNTHETIC_TOOLS))
        .map(synthetic_tool)
        .collect()
}

fn synthetic_tool(index: usize) -> Tool {
    let noun = NOUNS[index % NOUNS.len()];
    let verb = VERBS[(index / NOUNS.len()) % VERBS.len()];
    let area = AREAS[index / (NOUNS.len() * VERBS.len())];
    let name = format!("{area}_{verb}_{noun}");
    let (description, schema) = match verb {
        "list" | "search" | "export" => (
            format!(
                "{} {noun} in the {area} workspace, newest first. Use `query` to filter by text \
                 and `cursor` to read the next page; each page holds at most `limit` {noun}.",
                capitalized(verb)
            ),
            json!({
                "type": "object",
                "properties": {
                    "query": { "type": "string", "description": format!("Text the {noun} must contain") },
                    "limit": { "type": "integer", "minimum": 1, "maximum": 100, "default": 20 },
                    "cursor": { "type": "string", "description": "From the previous page's nextCursor" },
                    "sort": { "type": "string", "enum": ["newest", "oldest", "name"] },
                },
                "required": [],
                "additionalProperties": false,
            }),
        ),
        "create" | "update" => (
            format!(
                "{} one of the {noun} in {area}. Fields not given keep their value; returns the \
                 {noun} as stored.",
                capitalized(verb)
            ),
            json!({
                "type": "object",
                "properties": {
                    "id": { "type": "string", "description": format!("Which of the {noun} (update only)") },
                    "name": { "type": "string", "minLength": 1 },
                    "description": { "type": "string" },
                    "tags": { "type": "array", "items": { "type": "string" } },
                    "owner": {
                        "type": "object",
                        "properties": { "id": { "type": "string" }, "email": { "type": "string" } },
                        "required": ["id"],
                    },
                },
                "required": ["name"],
                "additionalProperties": false,
            }),
        ),
        _ => (
            format!(
                "{} one of the {noun} in {area} by its id. Fails when there is no such one.",
                capitalized(verb)
            ),
            json!({
                "type": "object",
                "properties": { "id": { "type": "string", "description": format!("The id of one of the {noun}") } },
                "required": ["id"],
                "additionalProperties": false,
            }),
        ),
    };
    let schema: Map<String, Value> = match schema {
        Value::Object(map) => map,
        // Every schema above is an object literal.
        _ => Map::new(),
    };
    let mut tool = Tool::new(name, description, Arc::new(schema));
    if verb == "delete" {
        tool.annotations = Some(ToolAnnotations::new().destructive(true));
    } else if matches!(verb, "list" | "get" | "search" | "count") {
        tool.annotations = Some(ToolAnnotations::new().read_only(true));
    }
    tool
}

fn capitalized(word: &str) -> String {
    let mut characters = word.chars();
    characters.next().map_or_else(String::new, |first| {
        first.to_ascii_uppercase().to_string() + characters.as_str()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_and_shaped_like_real_ones() {
        let tools = synthetic_tools(MAX_SYNTHETIC_TOOLS + 5);
        assert_eq!(tools.len(), 10_000);
        let names: std::collections::HashSet<_> = tools.iter().map(|tool| &tool.name).collect();
        assert_eq!(names.len(), tools.len());
        assert_eq!(tools[0].name, "billing_list_items");
        assert_eq!(tools[9_999].name, "legal_count_webhooks");
        assert!(tools.iter().all(|tool| tool.description.is_some()));
    }
}
