//! The tool catalog: guest names, ranked search and TypeScript declarations generated from JSON
//! Schema.
//!
//! A [`Catalog`] is built from every configured server name and the tools of the servers that are
//! ready. It is immutable and pure (no I/O): the gateway builds a new one whenever an upstream
//! tool list changes.
//!
//! - [`names`]: how upstream names become identifiers (`get-sum` → `get_sum`), collision-free.
//! - [`Catalog::resolve`] / [`Catalog::suggest`]: a call name to its tool, or close names.
//! - [`Catalog::search`]: BM25F over names, titles, parameters and descriptions, and what each
//!   server says about itself (its instructions).
//! - [`Catalog::signature`], [`Catalog::declaration`], [`Catalog::declarations`]: TypeScript, from
//!   a walk of each tool's JSON Schemas ([`schema`]) into a small type representation that
//!   [`Catalog::python_signature`] and [`Catalog::python_stub`] render as Python too.

#![cfg_attr(
    test,
    allow(
        clippy::too_many_lines,
        reason = "a test reads top to bottom as one scenario"
    )
)]

pub mod arguments;
mod declarations;
mod docs;
pub mod findings;
mod flavor;
mod lookup;
pub mod names;
pub mod observed;
mod python;
pub mod schema;
mod search;
mod text;
mod tool_schema;
mod typescript;
mod walk;

use std::collections::{BTreeMap, HashMap, HashSet};

pub use docs::{strip_invisible, visible};
pub use flavor::Flavor;
pub use names::{GuestNames, sanitize_identifier};
pub use observed::{NoObservations, Observations, ObservedReturn, Shape};
pub use search::{DEFAULT_SEARCH_LIMIT, Hit, MAX_SEARCHED_INSTRUCTION_TERMS};
pub use tool_schema::{Annotations, MAX_SCHEMA_DEPTH, SchemaTooDeep, ToolSchema};

use crate::lookup::NameIndex;
use crate::schema::ToolTypes;
use crate::search::{SearchIndex, Source};

/// The longest name (in bytes) [`Catalog::suggest`] looks for close names to. Tool names are
/// at most 128 characters by the MCP specification; a longer name can only be a mistake, and
/// comparing it with every tool would be work for nothing.
pub const MAX_NAME_BYTES: usize = 512;

/// One tool as its provider (an MCP server, or functions of the host program) defines it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// The namespace of the provider that lists it (an MCP server's configured name).
    pub server: String,
    /// The tool's name as the provider lists it.
    pub name: String,
    /// Human-readable title.
    pub title: Option<String>,
    /// What the tool does.
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    pub input_schema: ToolSchema,
    /// JSON Schema of `structuredContent`, when declared.
    pub output_schema: Option<ToolSchema>,
    /// MCP tool annotations (`readOnlyHint`, …), as sent.
    pub annotations: Option<Annotations>,
    /// An MCP Apps tool whose `_meta.ui.visibility` leaves out the model (`["app"]`): only the
    /// server's own user interface calls it. The catalog keeps it out: it is not searched,
    /// described, declared or called.
    pub app_only: bool,
}

impl ToolDefinition {
    /// Whether a tool's `_meta` makes it an app-only tool: `ui.visibility` is a list without
    /// `"model"` (MCP Apps). No `_meta`, no `ui`, no `visibility` or anything but a list: visible
    /// to the model, as the extension's default is.
    pub fn app_only_meta(meta: Option<&serde_json::Map<String, serde_json::Value>>) -> bool {
        let visibility = meta
            .and_then(|meta| meta.get("ui"))
            .and_then(|ui| ui.get("visibility"))
            .and_then(serde_json::Value::as_array);
        visibility.is_some_and(|audiences| {
            !audiences
                .iter()
                .any(|audience| audience.as_str() == Some("model"))
        })
    }
}

/// One tool of the catalog, with the names guest code calls it by.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The configured server name.
    pub server: String,
    /// The upstream tool name.
    pub tool: String,
    /// The server's identifier in guest code: `tools.<guest_server>`.
    pub guest_server: String,
    /// The tool's identifier in guest code: `tools.<guest_server>.<guest_tool>`.
    pub guest_tool: String,
    /// Human-readable title.
    pub title: Option<String>,
    /// What the tool does.
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    pub input_schema: ToolSchema,
    /// JSON Schema of `structuredContent`, when declared.
    pub output_schema: Option<ToolSchema>,
    /// MCP tool annotations, as sent.
    pub annotations: Option<Annotations>,
}

impl Entry {
    /// The guest call name, `server.tool` (called as `tools.server.tool(args)`).
    pub fn guest_name(&self) -> String {
        format!("{}.{}", self.guest_server, self.guest_tool)
    }

    /// Whether its title or description says it is deprecated: search ranks it after the tools
    /// that match as well, and says so.
    pub fn deprecated(&self) -> bool {
        search::says_deprecated(self.title.as_deref(), self.description.as_deref())
    }

    /// The types of its arguments and result, walked from its JSON Schemas.
    pub fn types(&self) -> ToolTypes {
        let output = self.output_schema.as_ref().map(ToolSchema::value);
        ToolTypes::from_schemas(&self.input_schema.value(), output.as_ref())
    }

    /// Its types as [`Entry::types`] has them, with the result `observations` saw for it when it
    /// declares no output schema (marked as observed, with how many calls it was seen in).
    pub fn types_with(&self, observations: &dyn Observations) -> ToolTypes {
        let mut types = self.types();
        if types.output.is_none()
            && let Some(observed) = observations.observed(self)
        {
            types.output = Some(observed.shape.type_expr());
            types.observed_calls = Some(observed.calls);
        }
        types
    }
}

/// Every upstream tool under its guest name, with name lookup, search and declarations.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// `(guest, configured)` server names, in configured order.
    namespaces: Vec<(String, String)>,
    /// Tools grouped by server in configured order, each server's tools in upstream order.
    entries: Vec<Entry>,
    names: NameIndex,
    search: SearchIndex,
    /// What each server says about itself (its `instructions`), by configured name, as search
    /// reads it.
    instructions: HashMap<String, String>,
}

impl Catalog {
    /// Builds the catalog. `servers`: every configured server name (also those with no tools
    /// yet, e.g. still starting); `tools`: the tools of ready servers.
    ///
    /// A tool of a server missing from `servers` gets a namespace after the configured ones; a
    /// second tool with the same name on one server is dropped (calls go by name, so only one
    /// can be reached).
    pub fn new(servers: &[String], tools: Vec<ToolDefinition>) -> Self {
        Self::build(servers, tools, None, None, HashMap::new())
    }

    /// Builds the catalog as [`new`](Self::new) does, with what each server says about itself
    /// (its `instructions`, by configured name): search finds a server's tools by these words
    /// too, weighed below what the tools themselves say. Search reads at most the first
    /// [`MAX_SEARCHED_INSTRUCTION_TERMS`] words of each.
    pub fn with_instructions(
        servers: &[String],
        tools: Vec<ToolDefinition>,
        instructions: HashMap<String, String>,
    ) -> Self {
        Self::build(servers, tools, None, None, instructions)
    }

    /// Builds the catalog as [`new`](Self::new) does, taking what it can from `self`: the
    /// search terms of every tool that is the same as in `self`, so a change of one server's
    /// tools costs about that server's part of a build.
    pub fn rebuilt(&self, servers: &[String], tools: Vec<ToolDefinition>) -> Self {
        Self::build(servers, tools, Some(self), None, HashMap::new())
    }

    /// Builds the catalog as [`new`](Self::new) does (or [`rebuilt`](Self::rebuilt), with
    /// `previous`), with the guest names in `names` instead of names assigned over `tools`:
    /// names assigned over longer lists than the tools kept, so leaving a tool out renames none
    /// of the others. A server or tool `names` lacks gets its name made an identifier.
    /// `instructions`: what each server says about itself, as
    /// [`with_instructions`](Self::with_instructions) takes them.
    pub fn named(
        servers: &[String],
        tools: Vec<ToolDefinition>,
        names: &GuestNames,
        instructions: HashMap<String, String>,
        previous: Option<&Catalog>,
    ) -> Self {
        Self::build(servers, tools, previous, Some(names), instructions)
    }

    fn build(
        servers: &[String],
        tools: Vec<ToolDefinition>,
        previous: Option<&Catalog>,
        names: Option<&GuestNames>,
        instructions: HashMap<String, String>,
    ) -> Self {
        let assigned;
        let names = match names {
            Some(names) => names,
            None => {
                assigned = GuestNames::assign(
                    servers,
                    tools
                        .iter()
                        .map(|tool| (tool.server.as_str(), tool.name.as_str())),
                );
                &assigned
            }
        };
        let namespaces = namespaces_of(names, servers, &tools);
        let server_names: Vec<&str> = namespaces
            .iter()
            .map(|(_, server)| server.as_str())
            .collect();

        let mut by_server: BTreeMap<usize, Vec<ToolDefinition>> = BTreeMap::new();
        let mut seen: HashSet<(usize, String)> = HashSet::new();
        for tool in tools.into_iter().filter(|tool| !tool.app_only) {
            let Some(position) = server_names.iter().position(|name| *name == tool.server) else {
                continue;
            };
            if seen.insert((position, tool.name.clone())) {
                by_server.entry(position).or_default().push(tool);
            }
        }

        let mut entries = Vec::with_capacity(by_server.values().map(Vec::len).sum());
        for (position, server_tools) in by_server {
            let guest_server = &namespaces[position].0;
            for tool in server_tools {
                let guest_tool = names.tool(&tool.server, &tool.name);
                entries.push(Entry {
                    server: tool.server,
                    tool: tool.name,
                    guest_server: guest_server.clone(),
                    guest_tool,
                    // What the model reads of a tool holds no character a person cannot see.
                    title: tool.title.as_deref().map(docs::strip_invisible),
                    description: tool.description.as_deref().map(docs::strip_invisible),
                    input_schema: tool.input_schema,
                    output_schema: tool.output_schema,
                    annotations: tool.annotations,
                });
            }
        }

        let sources = match previous {
            Some(previous) => previous.sources_for(&entries, &instructions),
            None => Vec::new(),
        };
        let names = NameIndex::build(
            &namespaces,
            &entries,
            &sources,
            previous.map(|it| &it.names),
        );
        let search = SearchIndex::build(
            &entries,
            &instructions,
            &sources,
            previous.map(|it| &it.search),
        );
        Self {
            namespaces,
            entries,
            names,
            search,
            instructions,
        }
    }

    /// For each of `entries`, the entry of this catalog it equals, if any, and whose server
    /// says the same about itself in `instructions` as it did here.
    fn sources_for(
        &self,
        entries: &[Entry],
        instructions: &HashMap<String, String>,
    ) -> Vec<Source> {
        let positions: HashMap<(&str, &str), usize> = self
            .entries
            .iter()
            .enumerate()
            .map(|(position, entry)| ((entry.server.as_str(), entry.tool.as_str()), position))
            .collect();
        entries
            .iter()
            .map(
                |entry| match positions.get(&(entry.server.as_str(), entry.tool.as_str())) {
                    Some(&old)
                        if self.entries[old] == *entry
                            && self.instructions.get(&entry.server)
                                == instructions.get(&entry.server) =>
                    {
                        Source::Reuse(old)
                    }
                    _ => Source::Collect,
                },
            )
            .collect()
    }

    /// `(guest name, configured name)` for every configured server, in the order given.
    pub fn namespaces(&self) -> impl Iterator<Item = (&str, &str)> {
        self.namespaces
            .iter()
            .map(|(guest, original)| (guest.as_str(), original.as_str()))
    }

    /// Every tool: servers in configured order, each server's tools in the order it lists them.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The tool `name` refers to: `server.tool` (guest names), `tools.server.tool`,
    /// `mcp__<server>__<tool>` (original names, e.g. `mcp__fixture__get-sum`), or original names
    /// with a dot (`fixture.get-sum`) when only one tool fits.
    pub fn resolve(&self, name: &str) -> Option<&Entry> {
        self.names
            .resolve(&self.entries, name)
            .and_then(|index| self.entries.get(index))
    }

    /// Up to three guest names (`server.tool`) close to a name that did not resolve, closest
    /// first; empty when nothing is close.
    pub fn suggest(&self, name: &str) -> Vec<String> {
        self.names.suggest(&self.entries, name)
    }

    /// One-line TypeScript signature, starting with the call:
    /// `tools.fixture.add(args: { a: number; b: number }): Promise<unknown>`. Deep or long parts
    /// are abbreviated (`{ … }`), so its length stays bounded.
    pub fn signature(&self, entry: &Entry) -> String {
        typescript::signature(
            &entry.types(),
            &format!("tools.{}.{}", entry.guest_server, entry.guest_tool),
        )
    }

    /// Full TypeScript declaration of one tool with doc comments, as
    /// `declare namespace tools.<server> { function <tool>(args: ...): Promise<...>; }`.
    pub fn declaration(&self, entry: &Entry) -> String {
        declarations::server_blocks(&[entry], &NoObservations)
    }

    /// Full TypeScript declarations of `entries`, one `declare namespace tools.<server>` block
    /// per server (in the order the servers first appear), each tool once as it is listed.
    pub fn declarations_of(&self, entries: &[&Entry]) -> String {
        declarations::server_blocks(entries, &NoObservations)
    }

    /// One `.d.ts` for every tool (`declare const tools: { ... }`) and the guest helpers
    /// `callMCPTool`, `searchTools` and `describeTools`.
    pub fn declarations(&self) -> String {
        declarations::all(&self.namespaces, &self.entries)
    }

    /// Python stub of one tool: `TypedDict`s for its object types and an `async def` with
    /// keyword arguments, in a class named after the server, documented like
    /// [`Catalog::declaration`].
    pub fn python_stub(&self, entry: &Entry) -> String {
        python::server_stubs(&[entry], &NoObservations)
    }

    /// Python stubs of `entries`: their `TypedDict`s (each once), then one class per server (in
    /// the order the servers first appear) with each tool once.
    pub fn python_stubs_of(&self, entries: &[&Entry]) -> String {
        python::server_stubs(entries, &NoObservations)
    }

    /// One-line Python signature, starting with the call:
    /// `tools.fixture.add(*, a: float, b: float = ...) -> Any`. The tool's object types are
    /// written in place as dict displays (`{"city": str, "days": NotRequired[int]}`); deep or
    /// long parts are abbreviated with `...` (`{...}`, `Literal["a", "b", ...]`), so its length
    /// stays bounded like [`Catalog::signature`]'s.
    pub fn python_signature(&self, entry: &Entry) -> String {
        python::signature(&entry.types(), entry)
    }

    /// Python stubs of every tool: shared `TypedDict`s, then one class of `async def`s per server.
    pub fn python_stubs(&self) -> String {
        python::all(&self.namespaces, &self.entries)
    }

    /// At most `limit` tools for `query`, best first (ties in catalog order). An empty query
    /// lists every tool in catalog order.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        self.search.search(query, limit)
    }
}

/// `(guest, configured)` server names: those of `names`, then the servers of `servers` and
/// `tools` it lacks, sorted, each its name made an identifier.
fn namespaces_of(
    names: &GuestNames,
    servers: &[String],
    tools: &[ToolDefinition],
) -> Vec<(String, String)> {
    let mut namespaces: Vec<(String, String)> = names.namespaces().to_vec();
    let mut unnamed: Vec<&str> = servers
        .iter()
        .map(String::as_str)
        .chain(tools.iter().map(|tool| tool.server.as_str()))
        .filter(|server| !namespaces.iter().any(|(_, named)| named == server))
        .collect();
    unnamed.sort_unstable();
    unnamed.dedup();
    namespaces.extend(
        unnamed
            .into_iter()
            .map(|server| (names.server(server), server.to_owned())),
    );
    namespaces
}
