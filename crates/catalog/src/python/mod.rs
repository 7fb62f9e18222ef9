//! Python stubs from the same type representation as the TypeScript: `TypedDict`s for object
//! types and an `async def` per tool with keyword arguments, documented Google-style.
//!
//! [`lower`] turns a tool's types into Python types, naming object types as it goes (Python has
//! no anonymous object types); [`write`](mod@write) renders them. This module puts stubs together and
//! writes a type used by several tools only once, and makes one-line signatures, where the named
//! object types are written in place again.

mod lower;
mod write;

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use crate::docs::description_lines;
use crate::schema::{Definition, ToolTypes};
use crate::typescript::{
    ARGUMENT_ABBREVIATIONS, RESULT_MAX_UNION, SIGNATURE_ARGUMENTS_WIDTH, SIGNATURE_RESULT_WIDTH,
};
use crate::{Entry, Observations};

use self::lower::{Lowered, NamedType};
use self::write::{Layout, Writer, docstring, python_string};

/// The renderings a signature's result tries in turn, `(max_depth, max_properties)`: the
/// TypeScript steps with two more before `{...}`, since `"key": NotRequired[T]` takes more room
/// than `key?: T` and a few keys say more than none.
const RESULT_ABBREVIATIONS: [(usize, usize); 6] =
    [(2, usize::MAX), (1, 8), (1, 4), (1, 2), (1, 1), (0, 0)];

/// What a one-line signature adds after a result that was observed, not declared.
const OBSERVED_MARK: &str = "  # observed";

/// The header of the whole stub file.
const HEADER: &str = r#""""Upstream MCP tools as toolweave's Python guest code sees them.

Each server is a namespace of async functions: `await tools.<server>.<tool>(...)`.
"""

from typing import Any, Literal, Never, NotRequired, TypedDict, Unpack


class llm:  # the model's LLM, through the MCP client (sampling) or toolweave's settings
    @staticmethod
    async def ask(prompt: str, options: dict[str, Any] | None = None, system: str | None = None, max_tokens: int | None = None, model: str | None = None) -> str: ...

    @staticmethod
    async def think(messages: list[dict[str, str]], system: str | None = None, max_tokens: int | None = None, model: str | None = None) -> dict[str, Any]:
        """{"text", "model", "stopReason"}; messages are {"role": "user" | "assistant", "content": str}."""
"#;

/// The stubs of `entries`: their named types (each written once), then one class per server, in
/// the order the servers first appear, with each tool's function.
pub(crate) fn server_stubs(entries: &[&Entry], observations: &dyn Observations) -> String {
    let mut scope = Scope::default();
    let mut classes = String::new();
    let mut servers: Vec<&str> = Vec::new();
    for entry in entries {
        if !servers.contains(&entry.guest_server.as_str()) {
            servers.push(&entry.guest_server);
        }
    }
    for server in servers {
        if !classes.is_empty() {
            classes.push('\n');
        }
        let _ = writeln!(classes, "class {server}:  # tools.{server}");
        for (position, entry) in entries
            .iter()
            .filter(|entry| entry.guest_server == server)
            .enumerate()
        {
            let types = entry.types_with(observations);
            let lowered = Lowered::new(&types, &entry.guest_tool);
            let renamed = scope.add(&lowered.named, &types.definitions);
            let writer = Writer::stub(&renamed);
            if position > 0 {
                classes.push('\n');
            }
            classes.push_str("    @staticmethod\n");
            classes.push_str(&writer.function(&lowered, &entry.guest_tool, &tool_doc(entry), 1));
        }
    }
    let mut text = scope.text;
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&classes);
    text
}

/// `tools.server.tool(*, a: float, b: str = ...) -> {"x": int}` on one line: the tool's own
/// object types written in place, abbreviated step by step until each part fits the TypeScript
/// signature's widths (the arguments take its steps, the result [`RESULT_ABBREVIATIONS`]).
pub(crate) fn signature(types: &ToolTypes, entry: &Entry) -> String {
    let lowered = Lowered::new(types, &entry.guest_tool);
    let renamed = HashMap::new();
    let writer = |max_depth, max_properties, max_union| Writer {
        renamed: &renamed,
        layout: Layout::Line {
            named: &lowered.named,
            definitions: &types.definitions,
            max_depth,
            max_properties,
            max_union,
        },
    };
    let mut parameters = String::new();
    for (max_depth, max_properties, max_union) in ARGUMENT_ABBREVIATIONS {
        let writer = writer(max_depth, max_properties, max_union);
        parameters = format!("({})", writer.parameters(&lowered.parameters));
        if parameters.chars().count() <= SIGNATURE_ARGUMENTS_WIDTH {
            break;
        }
    }
    let mut result = String::new();
    for (max_depth, max_properties) in RESULT_ABBREVIATIONS {
        result = writer(max_depth, max_properties, RESULT_MAX_UNION).result(&lowered);
        if result.chars().count() <= SIGNATURE_RESULT_WIDTH {
            break;
        }
    }
    let observed = if types.observed_calls.is_some() {
        OBSERVED_MARK
    } else {
        ""
    };
    format!(
        "tools.{}.{}{parameters} -> {result}{observed}",
        entry.guest_server, entry.guest_tool
    )
}

/// Stubs of every tool: shared named types first, then one class per server.
pub(crate) fn all(namespaces: &[(String, String)], entries: &[Entry]) -> String {
    let mut scope = Scope::default();
    let mut classes = String::new();
    for (guest, original) in namespaces {
        let _ = writeln!(classes, "\n\nclass {guest}:");
        let mut doc = format!("`tools.{guest}`");
        if guest != original {
            let _ = write!(doc, ": server {}", python_string(original));
        }
        let server_entries: Vec<&Entry> = entries
            .iter()
            .filter(|entry| entry.server == *original)
            .collect();
        if server_entries.is_empty() {
            doc.push_str(". No tools listed yet: the server may still be starting.");
        }
        classes.push_str(&docstring(&[doc], "    "));
        for entry in server_entries {
            let types = entry.types();
            let lowered = Lowered::new(&types, &entry.guest_tool);
            let renamed = scope.add(&lowered.named, &types.definitions);
            let writer = Writer::stub(&renamed);
            classes.push_str("\n    @staticmethod\n");
            classes.push_str(&writer.function(&lowered, &entry.guest_tool, &tool_doc(entry), 1));
        }
    }
    let mut text = String::from(HEADER);
    if !scope.text.is_empty() {
        text.push_str("\n\n");
        text.push_str(&scope.text);
    }
    text.push_str(&classes);
    text
}

/// Stands in for a type's own name while its text is compared with others.
const OWN_NAME: &str = "\u{0}";

/// Named types sharing one module: the same type is written once however many tools use it.
#[derive(Default)]
struct Scope {
    /// Definitions by name, to recognise one a second tool declares again.
    definitions: HashMap<String, Definition>,
    /// Every name in use.
    names: HashSet<String>,
    /// Generated type text (its own name replaced by [`OWN_NAME`]) → its name.
    generated: HashMap<String, String>,
    /// The types written so far.
    text: String,
}

impl Scope {
    /// Adds one tool's named types; returns how its local names are spelled in this scope.
    ///
    /// Definitions (from `$ref`s) keep their names when every one of them is new or equal to the
    /// one already there; otherwise all get fresh names. Then each generated `TypedDict` reuses an
    /// equal one, or gets a free name. Generated types only refer to definitions and to generated
    /// types before them, so their final text is known when they are compared.
    fn add(&mut self, named: &[NamedType], definitions: &[Definition]) -> HashMap<String, String> {
        let mut renamed: HashMap<String, String> = HashMap::new();
        let shared = definitions.iter().all(|definition| {
            self.definitions
                .get(&definition.name)
                .is_none_or(|known| known == definition)
                && (self.definitions.contains_key(&definition.name)
                    || !self.names.contains(&definition.name))
        });
        let mut skipped: HashSet<&str> = HashSet::new();
        for definition in definitions {
            let name = if shared {
                if self.definitions.contains_key(&definition.name) {
                    skipped.insert(&definition.name);
                }
                definition.name.clone()
            } else {
                self.fresh_name(&definition.name)
            };
            self.names.insert(name.clone());
            self.definitions.insert(name.clone(), definition.clone());
            renamed.insert(definition.name.clone(), name);
        }
        let is_definition =
            |name: &str| definitions.iter().any(|definition| definition.name == name);
        for item in named.iter().filter(|item| !is_definition(item.name())) {
            renamed.insert(item.name().to_owned(), OWN_NAME.to_owned());
            let key = Writer::stub(&renamed).named(item);
            if let Some(existing) = self.generated.get(&key) {
                renamed.insert(item.name().to_owned(), existing.clone());
                skipped.insert(item.name());
                continue;
            }
            let name = self.fresh_name(item.name());
            self.names.insert(name.clone());
            self.generated.insert(key, name.clone());
            renamed.insert(item.name().to_owned(), name);
        }
        let writer = Writer::stub(&renamed);
        for item in named {
            if !skipped.contains(item.name()) {
                if !self.text.is_empty() {
                    self.text.push('\n');
                }
                self.text.push_str(&writer.named(item));
            }
        }
        renamed
    }

    /// `wanted`, or `wanted2`, `wanted3`, … whichever is free first.
    fn fresh_name(&self, wanted: &str) -> String {
        let mut candidate = wanted.to_owned();
        let mut counter = 2;
        while self.names.contains(&candidate) {
            candidate = format!("{wanted}{counter}");
            counter += 1;
        }
        candidate
    }
}

fn tool_doc(entry: &Entry) -> Vec<String> {
    entry
        .description
        .as_deref()
        .map(description_lines)
        .filter(|lines| !lines.is_empty())
        .or_else(|| entry.title.as_deref().map(description_lines))
        .unwrap_or_default()
}
