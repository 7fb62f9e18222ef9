//! The three tools the model sees. Their descriptions are the whole of what a model learns about
//! toolweave up front, so they are short and exact.

use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value, json};
use toolweave_catalog::arguments::meant_argument;
use toolweave_catalog::{DEFAULT_SEARCH_LIMIT, MAX_NAME_BYTES};
use toolweave_core::{MAX_DESCRIBE_NAMES, MAX_QUERY_BYTES, TEXT_RESULT_RULE};

/// Ranked search over every upstream tool.
pub const SEARCH_TOOLS: &str = "search_tools";
/// TypeScript declarations of named tools.
pub const DESCRIBE_TOOLS: &str = "describe_tools";
/// Run code that calls upstream tools.
pub const EXECUTE_CODE: &str = "execute_code";
/// The most hits one search_tools call returns (more asked for is this many).
pub(crate) const MAX_SEARCH_LIMIT: usize = 50;

/// How code calls tools, as both shapes' `execute_code` descriptions say it.
const EXECUTE_USAGE: &str = "TypeScript/JavaScript (default): `await tools.<server>.<tool>({...})`; the code is an \
     async function body returning its `return` value or last expression; \
     Promise.all for parallel calls; also `searchTools(query)`, `describeTools([names])`, \
     `resources.<server>.read(uri)`, `prompts.<server>.get(name)`, \
     console.log. Python (language \"python\"; a subset: no class bases, generators or \
     packages): `await tools.<server>.<tool>(a=1)`, `asyncio.gather` for parallel \
     calls, `call_tool(\"server.tool\", {...})`, `search_tools`, `describe_tools`, \
     `resources`, `prompts`, print. \
     `store.get/set/delete/keys` persist across runs; pass back an answer's `session`. \
     Filter in code; return only what is needed. No fetch, files or Intl.";

/// The three tool definitions; `namespaces` are the guest server names listed in the execute
/// description.
pub fn tool_definitions(namespaces: &[String]) -> Vec<Tool> {
    let servers = if namespaces.is_empty() {
        "none configured".to_owned()
    } else {
        namespaces.join(", ")
    };
    let execute = format!(
        "Run code in a sandbox; every upstream tool is an async function. Servers: {servers}. \
         {EXECUTE_USAGE} {TEXT_RESULT_RULE} Find tools with search_tools and describe_tools."
    );
    let flavor = json!({
        "type": "string",
        "enum": ["typescript", "python"],
        "description": "Default typescript"
    });
    vec![
        tool(
            SEARCH_TOOLS,
            "Search upstream tools by task, e.g. \"create an issue\": call names, signatures, \
             one-line descriptions.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "maxLength": MAX_QUERY_BYTES, "description": "What you want to do"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "description": format!("Max results (default {DEFAULT_SEARCH_LIMIT})")},
                    "language": flavor
                },
                "required": ["query"]
            }),
            true,
        ),
        tool(
            DESCRIBE_TOOLS,
            "TypeScript declarations or Python stubs of tools, by call name \
             (e.g. \"github.create_issue\") or server name.",
            json!({
                "type": "object",
                "properties": {
                    "names": {
                        "type": "array",
                        "items": {"type": "string", "maxLength": MAX_NAME_BYTES},
                        "maxItems": MAX_DESCRIBE_NAMES
                    },
                    "language": flavor,
                    "schemas": {"type": "boolean", "description": "Also return the JSON Schemas (default false)"}
                },
                "required": ["names"]
            }),
            true,
        ),
        execute_tool(&execute),
    ]
}

/// `execute_code` alone, whose description carries `declarations` (and what they leave out):
/// the single shape.
pub(crate) fn single_definition(declarations: &str) -> Tool {
    execute_tool(&format!(
        "Run code in a sandbox where every upstream tool is an async function, declared below. \
         {EXECUTE_USAGE} {TEXT_RESULT_RULE}\n\n{declarations}"
    ))
}

/// `execute_code` with `description`.
fn execute_tool(description: &str) -> Tool {
    tool(
        EXECUTE_CODE,
        description,
        json!({
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                // The description says TypeScript is the default: a "default" here costs every
                // session tokens in tools/list.
                "language": {"type": "string", "enum": ["typescript", "javascript", "python"]},
                "allowedTools": {"type": "array", "items": {"type": "string"}},
                "timeoutMs": {"type": "integer"},
                // `resume` is read too, and not listed: the answer that gives one says how to pass
                // it, and every session pays for each property listed here.
                "session": {"type": "string"}
            },
            "required": ["code"]
        }),
        false,
    )
    .with_raw_output_schema(Arc::new(object(execution_output_schema())))
}

/// What `execute_code` puts in `structuredContent`: the value or the error, the warnings, and
/// what the run used. Console lines are in the text only: they are written for the model to
/// read, and a program that needs them as data returns them.
fn execution_output_schema() -> Value {
    // Terse: every session pays for it in tools/list.
    json!({
        "type": "object",
        "properties": {
            "result": {},
            "error": {"type": "object", "description": "{kind, message}"},
            "warnings": {"type": "array", "items": {"type": "string"}},
            "stats": {"type": "object"}
        }
    })
}

fn object(schema: Value) -> Map<String, Value> {
    match schema {
        Value::Object(map) => map,
        // The schemas here are literal objects.
        _ => Map::new(),
    }
}

fn tool(name: &'static str, description: &str, schema: Value, read_only: bool) -> Tool {
    let schema = object(schema);
    let mut annotations = ToolAnnotations::new();
    annotations.read_only_hint = Some(read_only);
    if !read_only {
        // Code may call tools that change the world; toolweave itself cannot promise it won't.
        annotations.open_world_hint = Some(true);
    }
    Tool::new(name, description.to_owned(), Arc::new(schema)).with_annotations(annotations)
}

/// The arguments each of the three tools reads; any other is named in a warning.
fn accepted_arguments(tool: &str) -> &'static [&'static str] {
    match tool {
        SEARCH_TOOLS => &["query", "limit", "language"],
        DESCRIBE_TOOLS => &["names", "language", "schemas"],
        EXECUTE_CODE => &[
            "code",
            "language",
            "allowedTools",
            "timeoutMs",
            "session",
            "resume",
        ],
        _ => &[],
    }
}

/// How many unknown arguments of one call get a warning of their own; the rest are counted.
const MAX_ARGUMENT_WARNINGS: usize = 5;
/// The most of an unknown argument's name a warning shows.
const MAX_ARGUMENT_NAME: usize = 64;

/// One warning per argument `tool` does not read, in the order given, naming it and what the
/// tool takes instead, for the first [`MAX_ARGUMENT_WARNINGS`]; then one saying how many more.
/// The call still runs: an argument other code-mode servers accept should cost the model a
/// sentence, not a failed call.
pub(crate) fn unknown_argument_warnings(tool: &str, arguments: &Map<String, Value>) -> Vec<String> {
    let accepted = accepted_arguments(tool);
    if accepted.is_empty() {
        // Not one of the three tools: the call fails naming them, which says enough.
        return Vec::new();
    }
    let takes = accepted
        .iter()
        .map(|name| format!("\"{name}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let accepted_names: Vec<String> = accepted.iter().map(|name| (*name).to_owned()).collect();
    let mut unknown = arguments
        .keys()
        .filter(|name| !accepted.contains(&name.as_str()));
    let mut warnings: Vec<String> = unknown
        .by_ref()
        .take(MAX_ARGUMENT_WARNINGS)
        .map(|name| {
            let hint = meant_argument(name, &accepted_names)
                .map(|close| format!(" Did you mean \"{close}\"?"))
                .unwrap_or_default();
            let name = toolweave_core::cut(name.clone(), MAX_ARGUMENT_NAME);
            format!("\"{name}\" is not an argument of {tool}; it was ignored.{hint} {tool} takes {takes}.")
        })
        .collect();
    let more = unknown.count();
    if more > 0 {
        warnings.push(format!(
            "… and {more} more arguments that {tool} does not read were ignored too."
        ));
    }
    warnings
}
