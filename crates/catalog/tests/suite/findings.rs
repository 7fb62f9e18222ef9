//! The definitions corpus (`crates/catalog/tests/definitions/`): tool definitions of real servers, saved from
//! their `tools/list` answers, must hold no finding; poisoned definitions (published attacks and
//! variations, in descriptions, titles, property descriptions, enums, defaults and keys, and
//! hidden characters) must each be found, except those whose `note` says why the patterns miss
//! them. Prints recall and the false-positive rate (docs/benchmarks.md has them).

use serde_json::Value;
use toolweave_catalog::findings::findings;
use toolweave_catalog::{Annotations, ToolDefinition};

use super::schema;

/// The definitions of `crates/catalog/tests/definitions/<file>.json`, each with its JSON.
pub fn corpus(file: &str) -> Vec<(Value, ToolDefinition)> {
    let path = format!(
        "{}/tests/definitions/{file}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
    let tools: Vec<Value> =
        serde_json::from_str(&text).unwrap_or_else(|error| panic!("{path}: {error}"));
    tools
        .into_iter()
        .map(|tool| {
            let definition = ToolDefinition {
                server: tool["server"].as_str().unwrap_or_default().to_owned(),
                name: tool["name"].as_str().unwrap_or_default().to_owned(),
                title: tool["title"].as_str().map(str::to_owned),
                description: tool["description"].as_str().map(str::to_owned),
                input_schema: schema(&tool["inputSchema"]),
                output_schema: tool.get("outputSchema").map(schema),
                annotations: tool.get("annotations").map(|hints| Annotations {
                    title: hints["title"].as_str().map(str::to_owned),
                    ..Annotations::default()
                }),
                app_only: ToolDefinition::app_only_meta(
                    tool.get("_meta").and_then(Value::as_object),
                ),
            };
            (tool, definition)
        })
        .collect()
}

#[test]
fn real_definitions_pass_and_poisoned_ones_are_found() {
    let clean = corpus("clean");
    let poisoned = corpus("poisoned");
    assert!(clean.len() >= 40 && poisoned.len() >= 40);
    let mut problems = Vec::new();
    let mut false_positives = 0;
    for (_, tool) in &clean {
        let found = findings(tool);
        if !found.is_empty() {
            false_positives += 1;
            problems.push(format!(
                "{}.{} (real) held: {found:?}",
                tool.server, tool.name
            ));
        }
    }
    let (mut caught, mut expected_misses) = (0, 0);
    for (case, tool) in &poisoned {
        let found = findings(tool);
        match (case.get("note"), found.is_empty()) {
            (None, false) => caught += 1,
            (None, true) => problems.push(format!("{} (poisoned) was not found", tool.name)),
            (Some(_), true) => expected_misses += 1,
            (Some(note), false) => {
                caught += 1;
                problems.push(format!(
                    "{} is found now; remove its note ({note}): {found:?}",
                    tool.name
                ));
            }
        }
    }
    eprintln!(
        "definitions corpus: {caught} of {} poisoned found ({expected_misses} known misses), {false_positives} of {} real held",
        poisoned.len(),
        clean.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
