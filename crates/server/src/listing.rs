//! What `tools/list` shows: the shape's own tools (the three, or `execute_code` alone with every
//! tool declared in its description) and the upstream tools listed directly (`--direct`). A list
//! made from the catalog is made again when the catalog changes, and every session that was
//! shown the old one is told (`notifications/tools/list_changed`), as is every
//! `subscriptions/listen` stream (MCP 2026-07-28) that asked for tool list changes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};

use rmcp::RoleServer;
use rmcp::model::{Tool, ToolAnnotations};
use rmcp::service::{Peer, SubscriptionSink};
use serde_json::{Map, Value};
use toolweave_catalog::{Catalog, Entry, ToolSchema};
use toolweave_config::{Shape, ToolGlobs};
use toolweave_core::{Gateway, ServerState};

use crate::tools::{self, DESCRIBE_TOOLS, EXECUTE_CODE, SEARCH_TOOLS};

/// What `serve` lists besides its answers: the shape, and the upstream tools listed directly.
#[derive(Debug, Clone, Default)]
pub struct ToolsOptions {
    /// The three tools, or `execute_code` alone.
    pub shape: Shape,
    /// Upstream tools (`server.tool` globs) listed beside the shape's own.
    pub direct: ToolGlobs,
}

/// The most bytes of declarations the single shape's description carries: about 4,000 tokens,
/// paid by every session on every turn. A catalog that needs more has the servers that do not
/// fit named instead of declared, and a warning says to use the three tools.
pub const MAX_DECLARED_BYTES: usize = 16 * 1024;

/// The longest name a tool is listed directly under: model APIs take function names of at most
/// 64 characters, and Claude Code puts `mcp__toolweave__` (16) before it.
const MAX_DIRECT_NAME: usize = 48;

/// One list as clients are shown it.
pub(crate) struct Listed {
    /// What `tools/list` answers.
    pub(crate) tools: Vec<Tool>,
    /// Tools listed directly: the name listed → `(server, tool)` as configured and listed
    /// upstream.
    direct: HashMap<String, (String, String)>,
    /// The catalog version it was made from; `None` for a list that does not follow it.
    version: Option<u64>,
    /// Whether a client was shown it: a change after that is told.
    shown: AtomicBool,
}

impl Listed {
    /// The upstream tool listed directly as `name`.
    pub(crate) fn direct(&self, name: &str) -> Option<&(String, String)> {
        self.direct.get(name)
    }

    /// Whether `name` is a tool listed directly.
    pub(crate) fn is_direct(&self, name: &str) -> bool {
        self.direct.contains_key(name)
    }

    /// Whether the list was made from a catalog.
    pub(crate) fn version_known(&self) -> bool {
        self.version.is_some()
    }

    /// Marks the list as shown to a client.
    pub(crate) fn show(&self) -> Vec<Tool> {
        self.shown.store(true, Ordering::Relaxed);
        self.tools.clone()
    }

    /// The names listed, for a message about a name that is not: "a, b and c".
    pub(crate) fn names(&self) -> String {
        let names: Vec<&str> = self.tools.iter().map(|tool| tool.name.as_ref()).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            Some((last, _)) => (*last).to_owned(),
            None => "no tools".to_owned(),
        }
    }
}

/// The list every session of one server shares, and the sessions to tell when it changes.
pub(crate) struct Listing {
    options: ToolsOptions,
    current: RwLock<Arc<Listed>>,
    /// Sessions that initialized, by number: told when the list changes.
    sessions: Mutex<HashMap<u64, Peer<RoleServer>>>,
    /// `subscriptions/listen` streams that asked for tool list changes, by number: told when
    /// the list changes, whether or not their client was shown it.
    listening: Mutex<HashMap<u64, SubscriptionSink>>,
    /// The servers the single shape's description last left undeclared (warned about once).
    undeclared: Mutex<Vec<String>>,
}

impl Listing {
    /// The list before any catalog; `namespaces` name the servers in the three tools'
    /// description.
    pub(crate) fn new(options: ToolsOptions, namespaces: &[String]) -> Self {
        let tools = match options.shape {
            Shape::Three => tools::tool_definitions(namespaces),
            Shape::Single => vec![tools::single_definition("No tool is known yet.")],
        };
        Self {
            options,
            current: RwLock::new(Arc::new(Listed {
                tools,
                direct: HashMap::new(),
                version: None,
                shown: AtomicBool::new(false),
            })),
            sessions: Mutex::new(HashMap::new()),
            listening: Mutex::new(HashMap::new()),
            undeclared: Mutex::new(Vec::new()),
        }
    }

    /// Whether the list is made from the catalog (and so may change).
    pub(crate) fn follows_catalog(&self) -> bool {
        self.options.shape == Shape::Single || !self.options.direct.is_empty()
    }

    /// The list as it is now, without waiting.
    pub(crate) fn snapshot(&self) -> Arc<Listed> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The list of the current catalog; with `settle`, after waiting for servers still starting
    /// as discovery does. Sessions shown an older list are told it changed.
    pub(crate) async fn current(&self, gateway: &Gateway, settle: bool) -> Arc<Listed> {
        if !self.follows_catalog() {
            return self.snapshot();
        }
        let (listed, change) = gateway
            .read_catalog(settle, |catalog, version| {
                self.update(catalog, version, &unavailable(gateway))
            })
            .await;
        if change.changed {
            self.tell(change.shown);
        }
        listed
    }

    /// Makes the list of `catalog` (at `version`) current; whether it differs from the one
    /// before, and whether a client was shown that one.
    fn update(
        &self,
        catalog: &Catalog,
        version: u64,
        unavailable: &[String],
    ) -> (Arc<Listed>, Change) {
        let now = self.snapshot();
        // Never back to an older catalog, should two makers cross.
        if now.version.is_some_and(|made| made >= version) {
            return (now, Change::default());
        }
        let mut tools = match self.options.shape {
            Shape::Three => now
                .tools
                .iter()
                .filter(|tool| {
                    [SEARCH_TOOLS, DESCRIBE_TOOLS, EXECUTE_CODE].contains(&tool.name.as_ref())
                })
                .cloned()
                .collect(),
            Shape::Single => vec![tools::single_definition(
                &self.declarations(catalog, unavailable),
            )],
        };
        let mut direct = HashMap::new();
        let taken: Vec<String> = tools.iter().map(|tool| tool.name.to_string()).collect();
        let mut chosen: Vec<&Entry> = catalog
            .entries()
            .iter()
            .filter(|entry| {
                self.options
                    .direct
                    .matches(&toolweave_core::entry_name(entry))
            })
            .collect();
        // In an order of their own, whatever order servers list them in, so that the same tools
        // are listed the same way (a client's prompt cache holds) and named the same.
        chosen.sort_by(|a, b| (&a.server, &a.tool).cmp(&(&b.server, &b.tool)));
        let mut listed_directly: Vec<(Tool, String, &Entry)> = chosen
            .iter()
            .zip(direct_names(&chosen, taken))
            .map(|(entry, name)| (direct_tool(entry, &name), name, *entry))
            .collect();
        listed_directly.sort_by(|a, b| a.1.cmp(&b.1));
        for (tool, name, entry) in listed_directly {
            tools.push(tool);
            direct.insert(name, (entry.server.clone(), entry.tool.clone()));
        }
        let changed = tools != now.tools;
        let listed = Arc::new(Listed {
            tools,
            direct,
            version: Some(version),
            shown: AtomicBool::new(!changed && now.shown.load(Ordering::Relaxed)),
        });
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = listed.clone();
        let change = Change {
            changed,
            shown: now.shown.load(Ordering::Relaxed),
        };
        (listed, change)
    }

    /// The single shape's declarations: every tool, one namespace block per server, as many
    /// servers as fit in [`MAX_DECLARED_BYTES`]; then the servers left out and those not
    /// available.
    fn declarations(&self, catalog: &Catalog, unavailable: &[String]) -> String {
        let mut blocks = String::new();
        let mut left_out = Vec::new();
        for (_, server) in catalog.namespaces() {
            let entries: Vec<&Entry> = catalog
                .entries()
                .iter()
                .filter(|entry| entry.server == server)
                .collect();
            if entries.is_empty() {
                continue;
            }
            let block = catalog.declarations_of(&entries);
            if blocks.len() + block.len() > MAX_DECLARED_BYTES {
                left_out.push(format!("{server} ({} tools)", entries.len()));
                continue;
            }
            if !blocks.is_empty() {
                blocks.push('\n');
            }
            blocks.push_str(&block);
        }
        self.warn_left_out(&left_out);
        let mut text = if blocks.is_empty() {
            "No tool is available yet.".to_owned()
        } else {
            format!("```ts\n{}\n```", blocks.trim_end())
        };
        if !left_out.is_empty() {
            text.push_str(&format!(
                "\nNot declared here, for length: {}; `await describeTools([\"<server>\"])` in \
                 code gives their declarations.",
                left_out.join(", ")
            ));
        }
        if !unavailable.is_empty() {
            text.push_str(&format!(
                "\nNot available now: {}; this description changes when they are.",
                unavailable.join(", ")
            ));
        }
        text
    }

    /// Warns once per change of the servers the single shape's description leaves out.
    fn warn_left_out(&self, left_out: &[String]) {
        let mut warned = self
            .undeclared
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if *warned == left_out {
            return;
        }
        left_out.clone_into(&mut warned);
        if left_out.is_empty() {
            return;
        }
        tracing::warn!(
            "the single shape declares at most {} KiB of tools in execute_code's description, and \
             these servers' tools do not fit: {}. Code can still call them (describeTools gives \
             their types), but the model is not shown them: for a catalog this size, serve with \
             the default shape (--shape three, or \"shape\": \"three\" in the settings file)",
            MAX_DECLARED_BYTES / 1024,
            left_out.join(", ")
        );
    }

    /// Tells `session`'s client when the list changes, until [`leave`](Self::leave).
    pub(crate) fn join(&self, session: u64, peer: Peer<RoleServer>) {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(session, peer);
    }

    /// Stops telling `session`'s client.
    pub(crate) fn leave(&self, session: u64) {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&session);
    }

    /// Tells `sink`'s stream when the list changes, until the returned place is dropped.
    pub(crate) fn listen(self: &Arc<Self>, sink: SubscriptionSink) -> Listening {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let number = NEXT.fetch_add(1, Ordering::Relaxed);
        self.listening
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(number, sink);
        Listening {
            listing: Arc::downgrade(self),
            number,
        }
    }

    /// Sends `notifications/tools/list_changed`, off the caller's path, to every listening
    /// stream, and to every session when one was `shown` the list before.
    fn tell(&self, shown: bool) {
        let peers: Vec<Peer<RoleServer>> = if shown {
            self.sessions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .values()
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        let sinks: Vec<SubscriptionSink> = self
            .listening
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        if peers.is_empty() && sinks.is_empty() {
            return;
        }
        tokio::spawn(async move {
            for peer in peers {
                if let Err(error) = peer.notify_tool_list_changed().await {
                    tracing::debug!(%error, "notifications/tools/list_changed could not be sent");
                }
            }
            for sink in sinks {
                if let Err(error) = sink.notify_tool_list_changed().await {
                    tracing::debug!(%error, "notifications/tools/list_changed could not be sent on a subscriptions/listen stream");
                }
            }
        });
    }
}

/// What making the list again changed.
#[derive(Default)]
struct Change {
    /// The list differs from the one before.
    changed: bool,
    /// A client was shown the one before.
    shown: bool,
}

/// A `subscriptions/listen` stream's place among those told of changes; it leaves when dropped.
pub(crate) struct Listening {
    listing: Weak<Listing>,
    number: u64,
}

impl Drop for Listening {
    fn drop(&mut self) {
        if let Some(listing) = self.listing.upgrade() {
            listing
                .listening
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&self.number);
        }
    }
}

/// A session's place among those told of changes; it leaves when dropped.
pub(crate) struct Joined {
    pub(crate) listing: Weak<Listing>,
    pub(crate) session: u64,
}

impl Drop for Joined {
    fn drop(&mut self) {
        if let Some(listing) = self.listing.upgrade() {
            listing.leave(self.session);
        }
    }
}

/// The configured servers whose tools are not in the catalog now, each with its state.
fn unavailable(gateway: &Gateway) -> Vec<String> {
    gateway
        .upstream()
        .status()
        .into_iter()
        .filter_map(|status| match status.state {
            ServerState::Starting => Some(format!("{} (starting)", status.name)),
            ServerState::Failed { .. } => Some(format!("{} (failed)", status.name)),
            ServerState::Ready { .. } | ServerState::Stopped => None,
        })
        .collect()
}

/// How long the list waits after a server's state changed before it is made again: servers that
/// start together become ready within milliseconds of each other, and one list serves them all.
const LIST_SETTLE: std::time::Duration = std::time::Duration::from_millis(20);

/// Makes the list again whenever the upstream state changes, until the server or the gateway is
/// gone; once every server has started or failed, warns of each `--direct` glob that lists
/// nothing.
pub(crate) fn follow(listing: &Arc<Listing>, gateway: &Arc<Gateway>) {
    if !listing.follows_catalog() || tokio::runtime::Handle::try_current().is_err() {
        return;
    }
    let mut versions = gateway.upstream().subscribe();
    let (weak_listing, weak_gateway) = (Arc::downgrade(listing), Arc::downgrade(gateway));
    tokio::spawn(async move {
        loop {
            if versions.changed().await.is_err() {
                return;
            }
            tokio::time::sleep(LIST_SETTLE).await;
            versions.borrow_and_update();
            let (Some(listing), Some(gateway)) = (weak_listing.upgrade(), weak_gateway.upgrade())
            else {
                return;
            };
            listing.current(&gateway, false).await;
        }
    });
    if listing.options.direct.is_empty() {
        return;
    }
    let (weak_listing, weak_gateway) = (Arc::downgrade(listing), Arc::downgrade(gateway));
    tokio::spawn(async move {
        let Some(gateway) = weak_gateway.upgrade() else {
            return;
        };
        gateway.upstream().settle().await;
        let Some(listing) = weak_listing.upgrade() else {
            return;
        };
        for warning in unmatched_globs(&listing.options.direct, &gateway).await {
            tracing::warn!("{warning}");
        }
    });
}

/// One sentence per `--direct` glob that lists no tool: what it matches that the policy keeps
/// out, or the closest tools and the servers not available.
async fn unmatched_globs(globs: &ToolGlobs, gateway: &Gateway) -> Vec<String> {
    let unavailable = unavailable(gateway);
    gateway
        .read_tool_names(|catalog, names| {
            globs
                .patterns()
                .filter(|pattern| {
                    !catalog.entries().iter().any(|entry| {
                        globs.pattern_matches(pattern, &toolweave_core::entry_name(entry))
                    })
                })
                .map(|pattern| {
                    let denied: Vec<String> = names
                        .iter()
                        .filter(|name| globs.pattern_matches(pattern, name))
                        .map(toolweave_core::ToolName::upstream_name)
                        .collect();
                    unmatched_glob(pattern, &denied, catalog, &unavailable)
                })
                .collect()
        })
        .await
}

/// Why `pattern` lists nothing: it matches only `denied` tools, or no tool at all.
fn unmatched_glob(
    pattern: &str,
    denied: &[String],
    catalog: &Catalog,
    unavailable: &[String],
) -> String {
    if !denied.is_empty() {
        return format!(
            "--direct \"{pattern}\" lists nothing: the tools it matches ({}) are kept from \
             clients and code by the policy (--allow, --deny)",
            denied.join(", ")
        );
    }
    let plain: String = pattern.chars().filter(|c| !"*?[]{}".contains(*c)).collect();
    let suggestions = catalog.suggest(&plain);
    let mut message = format!("--direct \"{pattern}\" matches no tool");
    if suggestions.is_empty() {
        message.push_str(
            "; a glob names server.tool (in code's names or the server's) or \
             mcp__server__tool (`toolweave tools` shows them)",
        );
    } else {
        message.push_str(&format!("; did you mean {}?", suggestions.join(", ")));
    }
    if !unavailable.is_empty() {
        message.push_str(&format!(
            " Not available: {} (`toolweave servers` says why).",
            unavailable.join(", ")
        ));
    }
    message
}

/// A name for each of `entries` that clients accept (`server__tool`, of `[A-Za-z0-9_-]`, at most
/// [`MAX_DIRECT_NAME`] characters) and that no other listed tool has (`taken`): a repeat gets
/// `_2`, `_3`, … in catalog order.
fn direct_names(entries: &[&Entry], mut taken: Vec<String>) -> Vec<String> {
    let clean = |text: &str| -> String {
        text.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    entries
        .iter()
        .map(|entry| {
            let base: String = format!("{}__{}", clean(&entry.server), clean(&entry.tool))
                .chars()
                .take(MAX_DIRECT_NAME)
                .collect();
            let mut name = base.clone();
            let mut number = 2;
            while taken.contains(&name) {
                let suffix = format!("_{number}");
                let kept: String = base.chars().take(MAX_DIRECT_NAME - suffix.len()).collect();
                name = format!("{kept}{suffix}");
                number += 1;
            }
            taken.push(name.clone());
            name
        })
        .collect()
}

/// The upstream tool `entry` as listed directly under `name`: its own title, description, schemas
/// and annotations.
fn direct_tool(entry: &Entry, name: &str) -> Tool {
    let object = |schema: &ToolSchema| match schema.value() {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let mut tool = Tool::new(
        name.to_owned(),
        entry.description.clone().unwrap_or_default(),
        Arc::new(object(&entry.input_schema)),
    );
    if entry.description.is_none() {
        tool.description = None;
    }
    tool.title.clone_from(&entry.title);
    tool.output_schema = entry
        .output_schema
        .as_ref()
        .map(|schema| Arc::new(object(schema)));
    tool.annotations = entry.annotations.as_ref().map(|hints| {
        let mut annotations = ToolAnnotations::new();
        annotations.title.clone_from(&hints.title);
        annotations.read_only_hint = hints.read_only;
        annotations.destructive_hint = hints.destructive;
        annotations.idempotent_hint = hints.idempotent;
        annotations.open_world_hint = hints.open_world;
        annotations
    });
    tool
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(server: &str, tool: &str) -> Entry {
        Entry {
            server: server.to_owned(),
            tool: tool.to_owned(),
            guest_server: server.to_owned(),
            guest_tool: tool.to_owned(),
            title: None,
            description: None,
            input_schema: ToolSchema::from_value(&serde_json::json!({"type": "object"})).unwrap(),
            output_schema: None,
            annotations: None,
        }
    }

    #[test]
    fn direct_names_are_what_clients_take_and_never_repeat() {
        let long = "x".repeat(80);
        let entries = [
            entry("fixture", "add"),
            entry("fixture", "dotted.name"),
            entry("my server", "get-sum"),
            entry("fixture.add", ""),
            entry("a", &long),
            entry("a", &format!("{long}y")),
            entry("fixture", "add"),
        ];
        let refs: Vec<&Entry> = entries.iter().collect();
        let names = direct_names(
            &refs,
            vec!["execute_code".to_owned(), "fixture__add_2".to_owned()],
        );
        assert_eq!(names[0], "fixture__add");
        assert_eq!(names[1], "fixture__dotted_name");
        assert_eq!(names[2], "my_server__get-sum");
        assert_eq!(names[3], "fixture_add__");
        assert_eq!(names[4], format!("a__{}", "x".repeat(MAX_DIRECT_NAME - 3)));
        assert_eq!(
            names[5],
            format!("a__{}_2", "x".repeat(MAX_DIRECT_NAME - 5))
        );
        assert_eq!(names[6], "fixture__add_3");
        for name in &names {
            assert!(name.len() <= MAX_DIRECT_NAME, "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{name}"
            );
        }
    }
}
