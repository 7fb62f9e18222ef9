//! TypeScript declarations: the tools `describe_tools` names, one namespace block per server, and
//! the whole `.d.ts`.

use std::collections::HashMap;

use crate::docs::description_lines;
use crate::names::quote;
use crate::schema::ToolTypes;
use crate::typescript::{Renderer, doc_comment};
use crate::{DEFAULT_SEARCH_LIMIT, Entry, Observations};

/// What the guest sees besides the tools: result types and the helper functions.
const PRELUDE: &str = r#"// Upstream MCP tools as toolweave's guest code sees them: `await tools.<server>.<tool>(args)`
// resolves to the tool's structuredContent (else its text as sent; a JSON object or array as that
// value, a number a double cannot hold exactly in it as a string of its digits).

/** One item of a tool result's content. */
type ContentBlock =
  | { type: "text"; text: string }
  | { type: "image" | "audio"; data: string; mimeType: string }
  | { type: "resource"; resource: { uri: string; mimeType?: string; text?: string; blob?: string } }
  | { type: "resource_link"; uri: string; name: string; mimeType?: string; description?: string };

/** The whole result of a tool call, as the upstream server sent it. */
interface CallToolResult {
  content: ContentBlock[];
  structuredContent?: { [key: string]: unknown };
  isError?: boolean;
}

/** A server's tools. Each also has `.raw(args)`, which resolves to the whole CallToolResult. */
type ToolServer<T> = {
  readonly [K in keyof T]: T[K] & {
    raw(...args: T[K] extends (...args: infer A) => unknown ? A : never): Promise<CallToolResult>;
  };
};
"#;

/// The helper functions, after the tools.
const HELPERS: &str = r#"
/**
 * Calls a tool by name: "server.tool", or "mcp__<server>__<tool>" with the original names.
 * Resolves like `tools.<server>.<tool>(args)`; with `{ raw: true }`, to the whole CallToolResult.
 */
declare function callMCPTool(name: string, args?: object, options?: { raw?: boolean }): Promise<unknown>;

/** Ranked search over every tool, best first (default limit {default_limit}, at most 100). */
declare function searchTools(
  query: string,
  limit?: number,
): Promise<{ name: string; description: string; signature: string }[]>;

/**
 * Full declarations and JSON Schemas of tools, by call name ("server.tool") or server name: at
 * most 50 different names at once.
 */
declare function describeTools(names: string[]): Promise<{
  /** What each server named whole says about using its tools (its instructions), if anything. */
  instructions?: { server: string; instructions: string }[];
  tools: {
    name: string;
    server: string;
    tool: string;
    declaration: string;
    inputSchema: unknown;
    outputSchema?: unknown;
  }[];
  /** Names that matched nothing, each with close names. */
  unknown: [name: string, suggestions: string[]][];
  /** Tools named that did not fit in the answer's size limit: describe them a few at a time. */
  omitted?: string[];
}>;

/** What a server offers besides tools: `resources.<server>`, by its name in code or as configured. */
declare const resources: {
  readonly [server: string]: {
    /** Every resource the server lists. */
    list(): Promise<{ uri: string; name: string; title?: string; description?: string; mimeType?: string }[]>;
    /** The server's resource templates (URIs with `{placeholders}`). */
    templates(): Promise<{ uriTemplate: string; name: string; description?: string; mimeType?: string }[]>;
    /** A resource's contents: text, or base64 in `blob`. */
    read(uri: string): Promise<{ uri: string; mimeType?: string; text?: string; blob?: string }[]>;
  };
};

/** A server's prompts: `prompts.<server>`, by its name in code or as configured. */
declare const prompts: {
  readonly [server: string]: {
    list(): Promise<{ name: string; description?: string; arguments?: { name: string; description?: string; required?: boolean }[] }[]>;
    get(name: string, args?: { [name: string]: string }): Promise<{
      description?: string;
      messages: { role: "user" | "assistant"; content: ContentBlock }[];
    }>;
  };
};

/**
 * JSON values this MCP session keeps across executions (bounded by --max-store-bytes and
 * --max-store-keys). Python has the same names.
 */
declare const store: {
  /** The value under `key`, or null when there is none. */
  get(key: string): Promise<unknown>;
  set(key: string, value: unknown): Promise<null>;
  /** Whether there was a value. */
  delete(key: string): Promise<boolean>;
  keys(): Promise<string[]>;
};

/**
 * A value kept behind a handle: a result larger than the answer limit comes back as one, and
 * `handle(value)` makes one. Kept for --handle-ttl-ms in this MCP session.
 */
interface Handle {
  handle: string;
  /** Its size as JSON. */
  bytes: number;
  /** The start of its JSON. */
  preview: string;
  /** Its keys and types, with lengths of strings (characters) and arrays (items); no values. */
  shape: string;
}

/** Values kept behind handles. */
declare const results: {
  /**
   * The value behind `handle`, or the part of it at `path` ("items.3.name", "items[3].name");
   * with `offset` and `limit`, that many characters of a string or items of an array.
   */
  get(handle: string | Handle, options?: { path?: string; offset?: number; limit?: number }): Promise<unknown>;
};

/** Keeps `value` in this MCP session, for a later execution to read with `results.get`. */
declare function handle(value: unknown): Promise<Handle>;

/**
 * Adds a content block to the answer, after its text: an image or audio (base64 `data`), text,
 * or a resource link. Returning an image or audio block (a tool result's `content[0]`) does the
 * same. At most --max-emitted-blocks blocks of --max-emitted-bytes. Python: `await emit(block)`.
 */
declare function emit(
  block:
    | { type: "image" | "audio"; data: string; mimeType: string }
    | { type: "text"; text: string }
    | { type: "resource_link"; uri: string; name: string; mimeType?: string; description?: string },
): Promise<null>;

/**
 * Tells the client how far the program is while it runs (progress notifications, or log
 * messages when it asked for none); `done` should rise. Python: `progress(done, total, message)`.
 */
declare function progress(done: number, total?: number, message?: string): void;

/**
 * The model's LLM, asked through the MCP client (sampling) or the LLM toolweave's settings name.
 * One execution may send --max-llm-rounds requests, asking for --max-llm-tokens tokens in all
 * (the sum of maxTokens; 1024 when not given). `model` is a preference the client may ignore.
 */
declare const llm: {
  /** The answer's text. */
  ask(prompt: string, options?: { system?: string; maxTokens?: number; model?: string }): Promise<string>;
  /** The answer to a conversation, with the model that gave it and why it stopped ("endTurn", "maxTokens"). */
  think(request: {
    messages: { role: "user" | "assistant"; content: string }[];
    system?: string;
    maxTokens?: number;
    model?: string;
  }): Promise<{ text: string; model: string; stopReason: string | null }>;
};
"#;

/// One `declare namespace tools.<server> { ... }` per server of `entries`, in the order the
/// servers first appear: the tools' named types (written once where tools share one, renamed
/// where they clash), then a `function <tool>(args: ...): Promise<...>;` per tool, with doc
/// comments.
pub(crate) fn server_blocks(entries: &[&Entry], observations: &dyn Observations) -> String {
    let mut servers: Vec<&str> = Vec::new();
    for entry in entries {
        if !servers.contains(&entry.guest_server.as_str()) {
            servers.push(&entry.guest_server);
        }
    }
    let mut text = String::new();
    for server in servers {
        let mut aliases = GlobalAliases::at(1);
        let mut functions = String::new();
        for entry in entries.iter().filter(|entry| entry.guest_server == server) {
            let types = entry.types_with(observations);
            let renamed = aliases.add(&types);
            let renderer = Renderer::declaration(&types, Some(&renamed));
            functions.push_str(&renderer.method(
                &format!("function {}", entry.guest_tool),
                &tool_doc(entry),
                1,
            ));
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!(
            "declare namespace tools.{server} {{\n{}{functions}}}\n",
            aliases.text
        ));
    }
    text
}

/// The whole `.d.ts`: the prelude, named types, `declare const tools`, the helpers.
pub(crate) fn all(namespaces: &[(String, String)], entries: &[Entry]) -> String {
    let mut aliases = GlobalAliases::at(0);
    let mut servers = String::new();
    for (guest, original) in namespaces {
        let mut doc = Vec::new();
        if guest != original {
            doc.push(format!("Server {}.", quote(original)));
        }
        let server_entries: Vec<&Entry> = entries
            .iter()
            .filter(|entry| entry.server == *original)
            .collect();
        if server_entries.is_empty() {
            doc.push("No tools listed yet: the server may still be starting.".to_owned());
            servers.push_str(&doc_comment(&doc, "  "));
            servers.push_str(&format!(
                "  readonly {guest}: ToolServer<Record<string, (args?: object) => Promise<unknown>>>;\n"
            ));
            continue;
        }
        servers.push_str(&doc_comment(&doc, "  "));
        servers.push_str(&format!("  readonly {guest}: ToolServer<{{\n"));
        for entry in server_entries {
            let types = entry.types();
            let renamed = aliases.add(&types);
            let renderer = Renderer::declaration(&types, Some(&renamed));
            servers.push_str(&renderer.method(&entry.guest_tool, &tool_doc(entry), 2));
        }
        servers.push_str("  }>;\n");
    }
    let mut text = String::from(PRELUDE);
    if !aliases.text.is_empty() {
        text.push('\n');
        text.push_str(&aliases.text);
    }
    text.push_str("\ndeclare const tools: {\n");
    text.push_str(&servers);
    text.push_str("};\n");
    text.push_str(&HELPERS.replace("{default_limit}", &DEFAULT_SEARCH_LIMIT.to_string()));
    text
}

/// A tool's doc comment: its description, else its title.
fn tool_doc(entry: &Entry) -> Vec<String> {
    entry
        .description
        .as_deref()
        .map(description_lines)
        .filter(|lines| !lines.is_empty())
        .or_else(|| entry.title.as_deref().map(description_lines))
        .unwrap_or_default()
}

/// Named types of tools that share one scope (the whole `.d.ts`, or one server's namespace): a
/// definition keeps its name when that is free or already holds the same type (servers often
/// reuse one model across tools); otherwise all of the tool's definitions get fresh names.
struct GlobalAliases {
    /// Name → its rendered text (doc comment and body).
    taken: HashMap<String, String>,
    /// `type` lines so far.
    text: String,
    /// How deep the scope is nested: its `type` lines are indented this many levels.
    indent: usize,
}

impl GlobalAliases {
    /// An empty scope whose lines are indented `indent` levels.
    fn at(indent: usize) -> Self {
        Self {
            taken: HashMap::new(),
            text: String::new(),
            indent,
        }
    }

    /// Registers the definitions of one tool; returns how its local names are spelled here.
    fn add(&mut self, types: &ToolTypes) -> HashMap<String, String> {
        let local = Renderer::declaration(types, None);
        let rendered: Vec<(String, String)> = types
            .definitions
            .iter()
            .map(|definition| {
                (
                    definition.name.clone(),
                    local.definition(definition, self.indent),
                )
            })
            .collect();
        let shareable = rendered
            .iter()
            .all(|(name, text)| self.taken.get(name).is_none_or(|taken| taken == text));
        if shareable {
            for (name, text) in rendered {
                if let std::collections::hash_map::Entry::Vacant(slot) = self.taken.entry(name) {
                    self.text.push_str(&text);
                    slot.insert(text);
                }
            }
            return HashMap::new();
        }
        let mut renamed = HashMap::new();
        for definition in &types.definitions {
            let mut candidate = definition.name.clone();
            let mut counter = 2;
            while self.taken.contains_key(&candidate) || renamed.values().any(|n| *n == candidate) {
                candidate = format!("{}_{counter}", definition.name);
                counter += 1;
            }
            renamed.insert(definition.name.clone(), candidate);
        }
        let global = Renderer::declaration(types, Some(&renamed));
        for definition in &types.definitions {
            let text = global.definition(definition, self.indent);
            if let Some(name) = renamed.get(&definition.name) {
                self.text.push_str(&text);
                self.taken.insert(name.clone(), text);
            }
        }
        renamed
    }
}
