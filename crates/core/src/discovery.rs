//! Search and describe over the catalog, for the client (`search_tools`, `describe_tools`) and
//! for code (`searchTools`, `describeTools`): computed off the protocol thread, each answer within
//! the result limit, in the typings the asker reads ([`Flavor`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::Semaphore;
use toolweave_catalog::{Entry, Flavor, MAX_NAME_BYTES, NoObservations, Observations, ToolSchema};

use crate::catalog_cache::{CatalogCache, Unavailable};
use crate::catalog_state::CatalogState;
use crate::error::{CallError, DiscoveryError};
use crate::json_size::json_len;
use crate::provider::{ProviderState, ToolProvider};
use crate::returns::ObservedReturns;

/// Different names one describe request may hold: each one that names no tool is compared with
/// every tool for suggestions.
pub const MAX_DESCRIBE_NAMES: usize = 50;
/// Bytes of one search query: each word is looked up, and compared with the words of every tool
/// when it matches none.
pub const MAX_QUERY_BYTES: usize = 1000;
/// The most hits one search from code gets (more asked for is this many).
const MAX_CODE_SEARCH_LIMIT: u32 = 100;

/// How long a describe waits, at most, for the servers still starting whose tools it names (its
/// start-up timeout bounds each too): longer than most servers take to start, short enough for
/// a model to be told that one is slow.
pub const NAMED_SERVER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// One search hit, as both the MCP tool and guest code see it.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResult {
    /// The guest call name: `server.tool` (call it as `tools.server.tool(...)`).
    pub name: String,
    /// The first sentence of the tool's description (and, for a deprecated tool, what it says
    /// of that).
    pub description: String,
    /// Compact signature, in TypeScript or Python (see [`Flavor`]).
    pub signature: String,
    /// The tool says it is deprecated: it is ranked after tools that match as well.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deprecated: bool,
    /// The tool shares only a word or two with the query, not what it asks for.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub weak: bool,
}

/// What `search` found, best first.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SearchAnswer {
    /// The hits that fit in the answer.
    pub results: Vec<SearchResult>,
    /// How many more hits there were that did not fit within the result limit
    /// (`--max-result-bytes`).
    pub omitted: usize,
    /// The held tools the query asks for (see [`Gateway::held`](crate::Gateway::held)), by
    /// `server.tool` (original names).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<String>,
    /// How many other tools are held, per server.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held_elsewhere: Vec<(String, usize)>,
}

/// The full description of one tool.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Described {
    /// The guest call name: `server.tool`.
    pub name: String,
    /// The upstream server's name, as configured.
    pub server: String,
    /// The tool's name as the upstream server lists it.
    pub tool: String,
    /// TypeScript declaration or Python stub, with doc comments (see [`Flavor`]).
    pub declaration: String,
    /// The tool's JSON Schema for its arguments, when schemas were asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// The JSON Schema of its `structuredContent`, when schemas were asked for and the server
    /// declares one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

/// What a server said about using its tools (the `instructions` of its `initialize` answer).
#[derive(Debug, Clone, Serialize)]
pub struct ServerInstructions {
    /// The server's name, as configured.
    pub server: String,
    /// Its words, cut with a note when long.
    pub instructions: String,
}

/// What `describe` found: descriptions, and names it could not resolve with suggestions.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeAnswer {
    /// The instructions of the servers named as a whole (a bare server name), before their tools.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub instructions: Vec<ServerInstructions>,
    /// One entry per resolved tool, in the order asked.
    pub tools: Vec<Described>,
    /// Names that matched nothing, each with up to three close names.
    pub unknown: Vec<(String, Vec<String>)>,
    /// Names of tools of configured servers that are not ready (still starting past the wait,
    /// or failed), each with its server: not said to name no tool, since the server has not
    /// listed its tools; `unavailable` says why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unready: Vec<(String, String)>,
    /// Names of tools held because their definitions changed since they were pinned, each
    /// with why it is not described.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<(String, String)>,
    /// Names of MCP Apps tools that only their server's user interface calls, each with why
    /// it is not described.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub app_only: Vec<(String, String)>,
    /// Tools the names matched that were not described because the answer reached the result
    /// limit (`--max-result-bytes`), by guest call name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub omitted: Vec<String>,
    /// When some names matched nothing: the servers that are not available now, whose tools
    /// they may have named.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<Unavailable>,
    /// The declarations of every described tool, one namespace block (or Python class) per
    /// server: the text a model reads.
    #[serde(skip)]
    pub declarations: String,
}

impl DescribeAnswer {
    /// Records `name` (`trimmed` of spaces and `tools.`), which matched no tool: held, when its
    /// definition changed since it was pinned, else unknown with close names.
    fn not_found(&mut self, state: &CatalogState, name: &str, trimmed: &str) {
        if let Some(server) = state.server_mentioned(trimmed)
            && !state.is_ready(server)
        {
            self.unready.push((name.to_owned(), server.to_owned()));
            return;
        }
        if let Some((server, tool)) = state.app_only_tool(trimmed) {
            let why = crate::error::CallError::AppOnly {
                server: server.clone(),
                tool: tool.clone(),
            };
            self.app_only.push((name.to_owned(), why.to_string()));
            return;
        }
        match state.held_tool(trimmed) {
            Some(held) => self.held.push((
                name.to_owned(),
                crate::error::held_tool(&held.server, &held.tool, held.finding.as_deref()),
            )),
            None => self
                .unknown
                .push((name.to_owned(), state.catalog.suggest(trimmed))),
        }
    }
}

/// Search and describe over one gateway's catalog.
pub(crate) struct Discovery {
    catalogs: Arc<CatalogCache>,
    /// What tools without an output schema were seen to return: declared as observed.
    returns: Option<Arc<ObservedReturns>>,
    /// Searches and describes computed at once, off the protocol thread: they wait their turn
    /// rather than take every core from executions.
    slots: Arc<Semaphore>,
    /// The most bytes of JSON one answer holds (`--max-result-bytes`).
    max_result_bytes: usize,
}

impl Discovery {
    pub(crate) fn new(
        catalogs: Arc<CatalogCache>,
        returns: Option<Arc<ObservedReturns>>,
        max_result_bytes: usize,
    ) -> Self {
        Self {
            catalogs,
            returns,
            slots: Arc::new(Semaphore::new(discovery_threads())),
            max_result_bytes,
        }
    }

    /// Ranked search; with `settle`, first waits for servers still starting as
    /// [`CatalogCache::settled_catalog`] does, else reads the catalog as it is now.
    pub(crate) async fn search(
        &self,
        query: String,
        limit: usize,
        flavor: Flavor,
        settle: bool,
    ) -> Result<SearchAnswer, DiscoveryError> {
        if query.len() > MAX_QUERY_BYTES {
            return Err(DiscoveryError::QueryTooLong {
                size: query.len(),
                limit: MAX_QUERY_BYTES,
            });
        }
        let state = if settle {
            self.catalogs.settled_catalog().await
        } else {
            self.catalogs.current_catalog().await
        };
        let max_bytes = self.max_result_bytes;
        let returns = self.returns.clone();
        self.off_thread(move || {
            let observations = observations_of(returns.as_deref());
            search_in(&state, &query, limit, flavor, &*observations, max_bytes)
        })
        .await
    }

    /// Full declarations of the named tools. Names may be `server.tool`, `tools.server.tool`,
    /// `mcp__server__tool`, or a bare server name for all of its tools. At most
    /// [`MAX_DESCRIBE_NAMES`] different names of at most [`MAX_NAME_BYTES`] each; computed off
    /// the protocol thread; the answer stays within the result limit. With `schemas`, each tool
    /// also carries its JSON Schemas.
    pub(crate) async fn describe(
        &self,
        names: Vec<String>,
        flavor: Flavor,
        schemas: bool,
    ) -> Result<DescribeAnswer, DiscoveryError> {
        let state = self.catalogs.settled_catalog().await;
        let state = self.after_named_servers(state, &names).await;
        let max_bytes = self.max_result_bytes;
        let instructions = self.catalogs.instructions();
        let returns = self.returns.clone();
        let mut answer = self
            .off_thread(move || {
                let names = distinct_names(names)?;
                let observations = observations_of(returns.as_deref());
                let asked = Asked {
                    names: &names,
                    flavor,
                    schemas,
                    max_bytes,
                };
                Ok(describe_in(&state, &asked, &instructions, &*observations))
            })
            .await??;
        if !answer.unknown.is_empty() || !answer.unready.is_empty() {
            answer.unavailable = self.catalogs.unavailable();
        }
        Ok(answer)
    }

    /// `state`, or a newer snapshot once every server that `names` name and that is still
    /// starting is up or failed (each bounded by its startup timeout, as a call from code
    /// waits), so that a name is said to name no tool only of a server that listed its tools.
    async fn after_named_servers(
        &self,
        state: Arc<CatalogState>,
        names: &[String],
    ) -> Arc<CatalogState> {
        let mut starting: Vec<&Arc<dyn ToolProvider>> = Vec::new();
        for name in names.iter().take(MAX_DESCRIBE_NAMES) {
            let trimmed = name.trim();
            if state
                .catalog
                .resolve(trimmed.strip_prefix("tools.").unwrap_or(trimmed))
                .is_some()
            {
                continue;
            }
            let Some(server) = state.server_mentioned(trimmed) else {
                continue;
            };
            if let Some(provider) = self.catalogs.provider(server)
                && provider.state() == ProviderState::Starting
                && !starting.iter().any(|known| Arc::ptr_eq(known, provider))
            {
                starting.push(provider);
            }
        }
        if starting.is_empty() {
            return state;
        }
        // Each provider's own wait is bounded by its startup timeout, and this one by
        // `NAMED_SERVER_WAIT`; what became of them shows in the new snapshot and in
        // `unavailable`.
        let started = futures::future::join_all(starting.iter().map(|provider| provider.tools()));
        let _ = tokio::time::timeout(NAMED_SERVER_WAIT, started).await;
        self.catalogs.current_catalog().await
    }

    /// What guest code's `searchTools(query, limit)` (`search_tools` in Python) resolves to, or
    /// the message it rejects with.
    pub(crate) async fn search_for_code(
        &self,
        query: String,
        limit: Option<u32>,
        flavor: Flavor,
    ) -> Result<Value, CallError> {
        let limit = limit.map_or(toolweave_catalog::DEFAULT_SEARCH_LIMIT, |limit| {
            limit.clamp(1, MAX_CODE_SEARCH_LIMIT) as usize
        });
        let answer = self
            .search(query, limit, flavor, true)
            .await
            .map_err(CallError::Discovery)?;
        serde_json::to_value(answer.results).map_err(|error| CallError::Internal {
            message: error.to_string(),
        })
    }

    /// What guest code's `describeTools(names)` (`describe_tools` in Python) resolves to, or the
    /// message it rejects with: when no name matched a tool, why each did not.
    pub(crate) async fn describe_for_code(
        &self,
        names: Vec<String>,
        flavor: Flavor,
    ) -> Result<Value, CallError> {
        // Code gets the schemas: it reads them as data, and the model pays only for what the
        // program returns.
        let answer = self
            .describe(names, flavor, true)
            .await
            .map_err(CallError::Discovery)?;
        if answer.tools.is_empty() && !answer.held.is_empty() {
            return Err(CallError::AllHeld {
                held: answer.held.into_iter().map(|(_, why)| why).collect(),
            });
        }
        if answer.tools.is_empty() && answer.unknown.is_empty() && !answer.unready.is_empty() {
            return Err(CallError::ServersNotReady {
                unavailable: answer
                    .unavailable
                    .into_iter()
                    .map(|server| server.reason)
                    .collect(),
            });
        }
        if answer.tools.is_empty() && !answer.unknown.is_empty() {
            return Err(CallError::UnknownNames {
                unknown: answer.unknown,
                search: flavor.search_function(),
            });
        }
        serde_json::to_value(answer).map_err(|error| CallError::Internal {
            message: error.to_string(),
        })
    }

    /// Runs `work` on a blocking thread when a discovery slot is free, so that a long search or
    /// describe costs its requester the wait, and neither the protocol thread nor the other
    /// sessions. The slot is held until the work ends, also when its requester stops waiting.
    async fn off_thread<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, DiscoveryError> {
        let slot =
            self.slots
                .clone()
                .acquire_owned()
                .await
                .map_err(|error| DiscoveryError::Internal {
                    message: format!("no discovery slot: {error}"),
                })?;
        tokio::task::spawn_blocking(move || {
            let answer = work();
            drop(slot);
            answer
        })
        .await
        .map_err(|error| DiscoveryError::Internal {
            message: format!("the search or describe failed: {error}"),
        })
    }
}

/// What declarations read of `returns`: nothing when results are not observed.
fn observations_of(returns: Option<&ObservedReturns>) -> Box<dyn Observations + '_> {
    match returns {
        Some(returns) => Box::new(returns.observations()),
        None => Box::new(NoObservations),
    }
}

/// How many searches and describes run at once: every core but one, which stays for the
/// protocol and the executions.
fn discovery_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .saturating_sub(1)
        .max(1)
}

/// At most `limit` hits for `query`, as many as fit in `max_bytes` of JSON.
fn search_in(
    state: &CatalogState,
    query: &str,
    limit: usize,
    flavor: Flavor,
    observations: &dyn Observations,
    max_bytes: usize,
) -> SearchAnswer {
    let catalog = &state.catalog;
    let mut answer = SearchAnswer::default();
    // The array's brackets, then each hit with its comma.
    let mut used = 1;
    for hit in catalog.search(query, limit) {
        let Some(entry) = catalog.entries().get(hit.entry) else {
            continue;
        };
        if answer.omitted > 0 {
            answer.omitted += 1;
            continue;
        }
        let deprecated = entry.deprecated();
        let result = SearchResult {
            name: entry.guest_name(),
            description: summary(entry.description.as_deref().unwrap_or(""), deprecated),
            signature: flavor.signature(entry, observations),
            deprecated,
            weak: hit.weak,
        };
        used += json_len(&result) + 1;
        if used > max_bytes {
            answer.omitted += 1;
            continue;
        }
        answer.results.push(result);
    }
    for held in &state.held {
        if held.matches(query) {
            answer.held.push(format!("{}.{}", held.server, held.tool));
        } else {
            match answer.held_elsewhere.last_mut() {
                Some((server, count)) if *server == held.server => *count += 1,
                _ => answer.held_elsewhere.push((held.server.clone(), 1)),
            }
        }
    }
    answer
}

/// `names` without repeats, in the order given; an error past [`MAX_DESCRIBE_NAMES`] different
/// names, or for a name longer than [`MAX_NAME_BYTES`].
fn distinct_names(names: Vec<String>) -> Result<Vec<String>, DiscoveryError> {
    let given = names.len();
    let mut seen: HashSet<String> = HashSet::new();
    let mut distinct = Vec::new();
    for (position, name) in names.into_iter().enumerate() {
        if name.len() > MAX_NAME_BYTES {
            return Err(DiscoveryError::NameTooLong {
                position: position + 1,
                size: name.len(),
                beginning: name.chars().take(40).collect(),
                limit: MAX_NAME_BYTES,
            });
        }
        if seen.contains(&name) {
            continue;
        }
        if distinct.len() == MAX_DESCRIBE_NAMES {
            return Err(DiscoveryError::TooManyNames {
                given,
                limit: MAX_DESCRIBE_NAMES,
            });
        }
        seen.insert(name.clone());
        distinct.push(name);
    }
    Ok(distinct)
}

/// What a describe asks for: the names, in which language, with schemas or not, within how many
/// bytes.
#[derive(Clone, Copy)]
struct Asked<'a> {
    names: &'a [String],
    flavor: Flavor,
    schemas: bool,
    max_bytes: usize,
}

/// What `describe` tells of `entry` (called `call_name` in code): its declaration, and its
/// schemas when they are asked for.
fn described_tool(
    entry: &Entry,
    call_name: String,
    asked: &Asked<'_>,
    observations: &dyn Observations,
) -> Described {
    let Asked {
        flavor, schemas, ..
    } = *asked;
    Described {
        name: call_name,
        server: entry.server.clone(),
        tool: entry.tool.clone(),
        declaration: flavor.declaration(entry, observations),
        input_schema: schemas.then(|| entry.input_schema.value()),
        output_schema: entry
            .output_schema
            .as_ref()
            .filter(|_| schemas)
            .map(ToolSchema::value),
    }
}

/// Each tool `names` name, once, in the order named, as many as fit in `max_bytes` (the rest
/// under `omitted`); names that match nothing under `unknown`, with suggestions. A tool costs its
/// declaration, and its schemas when they are asked for. A bare server name names all of its
/// tools, and brings the server's `instructions` with them (counted in `max_bytes`, and never left
/// out: they are bounded, and come before the tools).
fn describe_in(
    state: &CatalogState,
    asked: &Asked<'_>,
    instructions: &HashMap<String, String>,
    observations: &dyn Observations,
) -> DescribeAnswer {
    let Asked {
        names,
        flavor,
        schemas,
        max_bytes,
    } = *asked;
    let catalog = &state.catalog;
    let mut answer = DescribeAnswer {
        instructions: Vec::new(),
        tools: Vec::new(),
        unknown: Vec::new(),
        unready: Vec::new(),
        held: Vec::new(),
        app_only: Vec::new(),
        omitted: Vec::new(),
        unavailable: Vec::new(),
        declarations: String::new(),
    };
    let mut described: Vec<&Entry> = Vec::new();
    let mut used = 0;
    for name in names {
        let trimmed = name.trim();
        let trimmed = trimmed.strip_prefix("tools.").unwrap_or(trimmed);
        let mut found: Vec<&Entry> = Vec::new();
        if let Some(entry) = catalog.resolve(trimmed) {
            found.push(entry);
        } else {
            found.extend(
                catalog
                    .entries()
                    .iter()
                    .filter(|entry| entry.guest_server == trimmed || entry.server == trimmed),
            );
            if let Some(entry) = found.first()
                && !answer
                    .instructions
                    .iter()
                    .any(|known| known.server == entry.server)
                && let Some(text) = instructions.get(&entry.server)
            {
                let server = ServerInstructions {
                    server: entry.server.clone(),
                    instructions: toolweave_catalog::visible(text),
                };
                used += json_len(&server) + 1;
                answer.instructions.push(server);
            }
        }
        if found.is_empty() {
            answer.not_found(state, name, trimmed);
        }
        for entry in found {
            let call_name = entry.guest_name();
            // One entry per tool, however many of the names spell it.
            if described.iter().any(|seen| std::ptr::eq(*seen, entry))
                || answer.omitted.contains(&call_name)
            {
                continue;
            }
            // Once one tool is left out, the ones after it are too: the answer is a prefix.
            if !answer.omitted.is_empty() {
                answer.omitted.push(call_name);
                continue;
            }
            let tool = described_tool(entry, call_name, asked, observations);
            used += tool.declaration.len() + tool.name.len();
            if schemas {
                // Twice: in the text the model reads and in `structuredContent`.
                used += 2 * (json_len(&tool.input_schema) + json_len(&tool.output_schema));
            }
            if used > max_bytes {
                answer.omitted.push(tool.name);
                continue;
            }
            answer.tools.push(tool);
            described.push(entry);
        }
    }
    answer.declarations = flavor.declarations_of(&described, observations);
    answer
}

/// What a search hit says of its tool: the first sentence of its description, at most
/// [`MAX_SUMMARY_CHARS`]; for a deprecated tool, also the sentence that says so (which names what
/// to use instead), or "Deprecated." when only its title says it.
fn summary(description: &str, deprecated: bool) -> String {
    let first_line = description
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("");
    let mut summary = sentences(first_line)
        .first()
        .copied()
        .unwrap_or("")
        .to_owned();
    if deprecated && !summary.to_lowercase().contains("deprecat") {
        let text = description.split_whitespace().collect::<Vec<_>>().join(" ");
        let notice = sentences(&text)
            .into_iter()
            .find(|sentence| sentence.to_lowercase().contains("deprecat"))
            .unwrap_or("Deprecated.")
            .to_owned();
        summary = if summary.is_empty() {
            notice
        } else {
            format!("{summary} {notice}")
        };
    }
    if summary.chars().count() > MAX_SUMMARY_CHARS {
        let cut: String = summary.chars().take(MAX_SUMMARY_CHARS - 1).collect();
        format!("{}…", cut.trim_end())
    } else {
        summary
    }
}

/// The most characters a search hit's description has.
const MAX_SUMMARY_CHARS: usize = 160;

/// `text` cut after each `.`, `!` or `?` that ends a sentence: followed by a space and not
/// closing a short abbreviation (`e.g.`, `i.e.`, `etc.`, `vs.`).
fn sentences(text: &str) -> Vec<&str> {
    let mut sentences = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (position, byte) in bytes.iter().enumerate() {
        if !matches!(byte, b'.' | b'!' | b'?') || bytes.get(position + 1) != Some(&b' ') {
            continue;
        }
        let word = text[start..position]
            .rsplit(' ')
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        if ["e.g", "i.e", "etc", "vs", "eg", "ie"].contains(&word.as_str()) {
            continue;
        }
        sentences.push(text[start..=position].trim());
        start = position + 1;
    }
    if !text[start..].trim().is_empty() {
        sentences.push(text[start..].trim());
    }
    sentences
}
