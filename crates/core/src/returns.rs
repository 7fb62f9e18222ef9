//! What tools without an output schema were seen to return: the shape of each successful call's
//! value (types and key names, never values: [`toolweave_catalog::observed`]), joined across
//! calls, kept per server beside the pins (`toolweave_config::ObservedFolder`), and declared as
//! the tool's result type with a note that it was observed.
//!
//! Recording is a leaf of a call: the bridge hands it the value it answers with, it joins the
//! shape in memory, and a write (only when the shape changed, the count of calls doubled, or the
//! server's file was not read yet) goes to a blocking thread; the call's answer waits for none
//! of it. A shape applies to the definition it was observed under: a tool whose definition
//! changed shows none until its next calls, which replace it.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use sha2::{Digest, Sha256};
use toolweave_catalog::{Entry, Observations, ObservedReturn, Shape, ToolSchema};
use toolweave_config::{ObservedFolder, ObservedTool, ServerObserved};

/// The most tools one gateway keeps observed results of, across its servers.
const MAX_OBSERVED_TOOLS: usize = 4_096;

/// The observed results of one gateway's tools, and the folder they are kept in.
pub(crate) struct ObservedReturns {
    folder: ObservedFolder,
    state: Mutex<State>,
    /// One write of the folder at a time from this process (the lock file orders processes).
    writing: Mutex<()>,
}

#[derive(Default)]
struct State {
    /// By `(server, tool)`.
    tools: HashMap<(String, String), Known>,
    /// Servers whose file was read into `tools`.
    loaded: HashSet<String>,
}

/// One tool's observed result.
struct Known {
    /// The digest of the definition it was observed under ([`definition_digest`]).
    definition: String,
    shape: Shape,
    calls: u64,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ObservedReturns {
    /// Observed results kept in the folder at `path`.
    pub(crate) fn new(path: std::path::PathBuf) -> Self {
        Self {
            folder: ObservedFolder::new(path),
            state: Mutex::new(State::default()),
            writing: Mutex::new(()),
        }
    }

    /// Records `value`, what a call of `entry` resolved to in guest code, when `entry` declares
    /// no output schema. Writes the server's file off the runtime's threads when there is
    /// something new to keep.
    pub(crate) fn record(self: &Arc<Self>, entry: &Entry, value: &Value) {
        if entry.output_schema.is_some() {
            return;
        }
        let seen = Shape::of(value);
        let definition = definition_digest(entry);
        let key = (entry.server.clone(), entry.tool.clone());
        let write = {
            let mut state = lock(&self.state);
            let loaded = state.loaded.contains(&entry.server);
            let full = state.tools.len() >= MAX_OBSERVED_TOOLS;
            match state.tools.get_mut(&key) {
                Some(known) if known.definition == definition => {
                    let joined = known.shape.clone().join(seen);
                    let changed = joined != known.shape;
                    known.shape = joined;
                    known.calls = known.calls.saturating_add(1);
                    changed || known.calls.is_power_of_two() || !loaded
                }
                Some(known) => {
                    *known = Known {
                        definition,
                        shape: seen,
                        calls: 1,
                    };
                    true
                }
                None if full => false,
                None => {
                    let known = Known {
                        definition,
                        shape: seen,
                        calls: 1,
                    };
                    state.tools.insert(key.clone(), known);
                    true
                }
            }
        };
        if write && let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let this = self.clone();
            runtime.spawn_blocking(move || this.write(&key.0, &key.1));
        }
    }

    /// Writes what is known of `server`'s `tool` into its file, joined with what the file
    /// holds (another gateway's calls), and takes the file's other entries in. Blocking.
    fn write(&self, server: &str, tool: &str) {
        let _writing = lock(&self.writing);
        let written = self.folder.update(server, |file| {
            let mut state = lock(&self.state);
            take_in(&mut state, server, file);
            let Some(known) = state.tools.get(&(server.to_owned(), tool.to_owned())) else {
                return false;
            };
            let kept = ObservedTool {
                definition: known.definition.clone(),
                calls: known.calls,
                returns: known.shape.to_schema(),
            };
            if file.tools.get(tool) == Some(&kept) {
                return false;
            }
            file.tools.insert(tool.to_owned(), kept);
            true
        });
        if let Err(error) = written {
            tracing::warn!(server = %server, "cannot keep the result types observed: {error}");
        }
    }

    /// Reads `server`'s file into memory, once. Blocking.
    fn load(&self, server: &str) {
        if lock(&self.state).loaded.contains(server) {
            return;
        }
        let file = match self.folder.load(server) {
            Ok(file) => file,
            Err(error) => {
                tracing::warn!(server = %server, "the result types observed are not read: {error}");
                lock(&self.state).loaded.insert(server.to_owned());
                return;
            }
        };
        take_in(&mut lock(&self.state), server, &file);
    }

    /// What declarations read: the observed result of each tool without an output schema,
    /// when it was observed under the tool's definition as it is. Reads the files of servers not
    /// read yet, so it is for blocking threads (search, describe).
    pub(crate) fn observations(&self) -> Reading<'_> {
        Reading(self)
    }
}

/// [`ObservedReturns`] as declarations read them.
pub(crate) struct Reading<'a>(&'a ObservedReturns);

impl Observations for Reading<'_> {
    fn observed(&self, entry: &Entry) -> Option<ObservedReturn> {
        if entry.output_schema.is_some() {
            return None;
        }
        self.0.load(&entry.server);
        let definition = definition_digest(entry);
        let state = lock(&self.0.state);
        let known = state
            .tools
            .get(&(entry.server.clone(), entry.tool.clone()))
            .filter(|known| known.definition == definition)?;
        Some(ObservedReturn {
            shape: known.shape.clone(),
            calls: known.calls,
        })
    }
}

/// Takes `file`'s entries (of `server`) into `state`: joined with what is known under the same
/// definition, added where nothing is known; an entry under another definition than the one
/// known is left (what this gateway saw is the tool as it is now). Marks the server read.
fn take_in(state: &mut State, server: &str, file: &ServerObserved) {
    for (tool, kept) in &file.tools {
        let Some(shape) = Shape::from_schema(&kept.returns) else {
            continue;
        };
        let full = state.tools.len() >= MAX_OBSERVED_TOOLS;
        match state.tools.get_mut(&(server.to_owned(), tool.clone())) {
            Some(known) if known.definition == kept.definition => {
                known.shape = known.shape.clone().join(shape);
                known.calls = known.calls.max(kept.calls);
            }
            Some(_) => {}
            None if full => {}
            None => {
                let known = Known {
                    definition: kept.definition.clone(),
                    shape,
                    calls: kept.calls,
                };
                state.tools.insert((server.to_owned(), tool.clone()), known);
            }
        }
    }
    state.loaded.insert(server.to_owned());
}

/// `sha256:` and a digest of `entry`'s definition as the catalog keeps it: its name, title,
/// description, schemas and annotations. A shape observed under one digest says nothing of a
/// tool whose digest is another.
fn definition_digest(entry: &Entry) -> String {
    let mut hasher = Sha256::new();
    let annotations = entry
        .annotations
        .as_ref()
        .map(|hints| hints.to_value().to_string());
    crate::pins::hash_definition(
        &mut hasher,
        [
            Some(&entry.tool),
            entry.title.as_deref(),
            entry.description.as_deref(),
            Some(entry.input_schema.as_json()),
            entry.output_schema.as_ref().map(ToolSchema::as_json),
            annotations.as_deref(),
        ],
    );
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolweave_catalog::{Catalog, ToolDefinition};

    fn catalog(description: &str) -> Catalog {
        let tool = ToolDefinition {
            server: "kv".to_owned(),
            name: "get".to_owned(),
            title: None,
            description: Some(description.to_owned()),
            input_schema: ToolSchema::from_value(&json!({"type": "object"})).unwrap(),
            output_schema: None,
            annotations: None,
            app_only: false,
        };
        Catalog::new(&["kv".to_owned()], vec![tool])
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn results_are_joined_kept_and_dropped_when_the_definition_changes() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("observed");
        let returns = Arc::new(ObservedReturns::new(path.clone()));
        let first = catalog("Gets a value.");
        let entry = &first.entries()[0];
        returns.record(entry, &json!({"key": "k", "value": "canary-3f9a"}));
        returns.record(entry, &json!({"key": "k", "expires": 5}));
        let observed = returns.observations().observed(entry).unwrap();
        assert_eq!(observed.calls, 2);
        assert_eq!(
            observed.shape.to_schema(),
            json!({"type": "object", "properties": {"key": {"type": "string"}, "value": {"type": "string"}, "expires": {"type": "integer"}}, "required": ["key"]})
        );
        // Written off the thread: wait for it, then a new gateway reads it.
        let file = path.join("kv.json");
        for _ in 0..200 {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            if text.contains("expires") {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("canary-3f9a"), "{text}");
        let again = ObservedReturns::new(path);
        assert_eq!(
            again.observations().observed(entry).unwrap().shape,
            observed.shape
        );

        let changed = catalog("Gets a value, now differently.");
        assert_eq!(again.observations().observed(&changed.entries()[0]), None);
    }
}
