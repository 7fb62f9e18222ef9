//! The catalog kept current: the tool providers, looked up by namespace, and the snapshot of
//! their tools (a [`CatalogState`]), rebuilt when a provider's state or tools change. The bridge
//! and discovery read tools here and reach providers through it; the gateway holds one.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde::Serialize;
use toolweave_config::Policy;

use crate::catalog_state::CatalogState;
use crate::pins::ToolPins;
use crate::provider::{ProviderState, ToolProvider};

/// How long after the gateway starts discovery (`search_tools`, `describe_tools` and their guest
/// functions) waits for servers still starting. Past it, discovery answers at once with the
/// servers that are ready and names those still starting, so one server that never answers costs
/// a search at most this, not the startup timeout. A call from code to a starting server still
/// waits for that server (up to `--startup-timeout-ms`).
pub const DISCOVERY_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// A provider (a configured server) whose tools cannot be searched or called right now, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Unavailable {
    /// The provider's namespace: a server's name, as configured.
    pub server: String,
    /// Why, naming the server: still starting, or the error that names the cause and what to
    /// change.
    pub reason: String,
}

/// Told of every snapshot installed: engines and workers prepared from then on set its tools up
/// ahead of the next job.
pub(crate) type Installed = Box<dyn Fn(&CatalogState) + Send + Sync>;

/// The providers and the snapshot of their tools.
pub(crate) struct CatalogCache {
    /// Every source of tools, MCP servers first (in config order), then the host's own.
    providers: Vec<Arc<dyn ToolProvider>>,
    /// The providers' change channels, each once: the catalog is rebuilt when one moves.
    changes: Vec<tokio::sync::watch::Receiver<u64>>,
    /// The providers' namespaces, in order.
    servers: Vec<String>,
    /// Which tools guest code may see and call.
    policy: Policy,
    /// The pinned tool definitions, when tools are pinned.
    pins: Option<Arc<ToolPins>>,
    /// How many times the pins file changed under a snapshot that holds tools: part of the
    /// version, so such a change rebuilds the catalog as a server's does.
    pins_changes: std::sync::atomic::AtomicU64,
    current: RwLock<Arc<CatalogState>>,
    /// Serializes rebuilds so concurrent callers share one.
    rebuild: tokio::sync::Mutex<()>,
    /// When the providers started: discovery waits for them until [`DISCOVERY_WAIT`] after.
    started: std::time::Instant,
    installed: Installed,
}

impl CatalogCache {
    /// The cache of `providers`' tools under `policy` and `pins`, which follows the providers
    /// from now on (when called within a tokio runtime); `installed` is told of each snapshot.
    pub(crate) fn start(
        providers: Vec<Arc<dyn ToolProvider>>,
        policy: Policy,
        pins: Option<ToolPins>,
        installed: Installed,
    ) -> Arc<Self> {
        let servers: Vec<String> = providers
            .iter()
            .map(|provider| provider.namespace().to_owned())
            .collect();
        let mut changes: Vec<tokio::sync::watch::Receiver<u64>> = Vec::new();
        for channel in providers.iter().filter_map(|provider| provider.changes()) {
            if !changes.iter().any(|known| known.same_channel(&channel)) {
                changes.push(channel);
            }
        }
        // Version 0 is this empty snapshot; the providers' state is version 1 and up.
        let empty = CatalogState::new(
            &servers,
            Vec::new(),
            &HashMap::new(),
            0,
            &policy,
            None,
            None,
        );
        let cache = Arc::new(Self {
            providers,
            changes,
            servers,
            policy,
            pins: pins.map(Arc::new),
            pins_changes: std::sync::atomic::AtomicU64::new(0),
            current: RwLock::new(Arc::new(empty)),
            rebuild: tokio::sync::Mutex::new(()),
            started: std::time::Instant::now(),
            installed,
        });
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let changes = cache.changes.clone();
            runtime.spawn(keep_catalog_current(Arc::downgrade(&cache), changes));
        }
        cache
    }

    /// The rules on which upstream tools guest code may see and call.
    pub(crate) fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The namespaces of every provider (MCP servers by their configured names), in order.
    pub(crate) fn servers(&self) -> &[String] {
        &self.servers
    }

    /// The version of the providers' state now: it changes whenever one's state or tools do.
    pub(crate) fn version(&self) -> u64 {
        1 + self
            .changes
            .iter()
            .map(|channel| *channel.borrow())
            .sum::<u64>()
            + self.pins_changes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Counts a change of the pins file (`toolweave trust` accepted a definition) when the
    /// current snapshot holds tools, so the next read rebuilds it. One `stat`, and only while
    /// something is held.
    fn notice_pins_change(&self) {
        if let Some(pins) = &self.pins
            && !self.snapshot().held.is_empty()
            && pins.moved()
        {
            self.pins_changes
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The provider whose namespace is `namespace` (as given, not as guest code spells it).
    pub(crate) fn provider(&self, namespace: &str) -> Option<&Arc<dyn ToolProvider>> {
        self.providers
            .iter()
            .find(|provider| provider.namespace() == namespace)
    }

    /// The snapshot as it is now, without waiting.
    pub(crate) fn snapshot(&self) -> Arc<CatalogState> {
        match self.current.read() {
            Ok(current) => current.clone(),
            // Poisoning only means a panic elsewhere; the Arc inside is still whole.
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The catalog for discovery (search, describe, declarations): [`current_catalog`]
    /// once the providers still starting are up, or [`DISCOVERY_WAIT`] after the providers
    /// started has passed.
    ///
    /// [`current_catalog`]: Self::current_catalog
    pub(crate) async fn settled_catalog(&self) -> Arc<CatalogState> {
        // Outside the rebuild lock: an execution that needs a fresh snapshot never queues behind
        // a server that is slow to start. The wait is polled once even with no time left, which
        // starts again a crashed server whose restart is due. Nothing is copied: with many
        // thousands of tools, copying every tool list would cost each search and describe.
        let left = DISCOVERY_WAIT.saturating_sub(self.started.elapsed());
        let settled =
            futures::future::join_all(self.providers.iter().map(|provider| provider.settle()));
        let _ = tokio::time::timeout(left, settled).await;
        self.current_catalog().await
    }

    /// A snapshot at least as new as the providers' state now, without waiting for providers
    /// still starting.
    pub(crate) async fn current_catalog(&self) -> Arc<CatalogState> {
        self.notice_pins_change();
        let version = self.version();
        let current = self.snapshot();
        if current.version == version {
            return current;
        }
        let _guard = self.rebuild.lock().await;
        let current = self.snapshot();
        if current.version == version {
            return current;
        }
        let mut tools = Vec::new();
        let mut instructions = HashMap::new();
        for provider in &self.providers {
            if provider.state() == ProviderState::Ready
                && let Ok(list) = provider.tools().await
            {
                tools.push((provider.namespace().to_owned(), list));
                if let Some(text) = provider.instructions() {
                    instructions.insert(provider.namespace().to_owned(), text);
                }
            }
        }
        // At thousands of tools a build takes a good part of a second of CPU: off the runtime's
        // threads, so other sessions' requests are not held up meanwhile.
        let servers = self.servers.clone();
        let policy = self.policy.clone();
        let pins = self.pins.clone();
        let build = move || {
            let started = std::time::Instant::now();
            let state = CatalogState::new(
                &servers,
                tools,
                &instructions,
                version,
                &policy,
                pins.as_deref(),
                Some(&current),
            );
            tracing::debug!(
                tools = state.catalog.entries().len(),
                took_ms = started.elapsed().as_secs_f64() * 1e3,
                "built the catalog"
            );
            state
        };
        let state = match tokio::task::spawn_blocking(build).await {
            Ok(state) => state,
            // A blocking task is never aborted, so its only error is its panic: passed on.
            Err(error) => std::panic::resume_unwind(error.into_panic()),
        };
        self.install(state)
    }

    fn install(&self, state: CatalogState) -> Arc<CatalogState> {
        let state = Arc::new(state);
        match self.current.write() {
            Ok(mut current) => *current = state.clone(),
            Err(poisoned) => *poisoned.into_inner() = state.clone(),
        }
        // Engines and workers prepared from now on set up these tools ahead of the next job.
        (self.installed)(&state);
        // Building a catalog frees most of what it allocates (at 10,000 tools, the gateway's
        // resident memory stayed tens of MB above what it holds); give it back, off this thread.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            drop(runtime.spawn_blocking(toolweave_sandbox::release_free_memory));
        }
        state
    }

    /// The providers that are not ready now (starting or failed), so that an answer that lists
    /// tools can say whose tools are missing from it.
    pub(crate) fn unavailable(&self) -> Vec<Unavailable> {
        self.providers
            .iter()
            .filter_map(|provider| {
                let reason = match provider.state() {
                    ProviderState::Ready | ProviderState::Stopped => return None,
                    ProviderState::Starting => format!(
                        "server \"{}\" is still starting, so its tools are not listed yet; look again in a moment (a call from code waits for it)",
                        provider.namespace()
                    ),
                    ProviderState::Failed { reason } => reason,
                };
                Some(Unavailable {
                    server: provider.namespace().to_owned(),
                    reason,
                })
            })
            .collect()
    }

    /// What each provider said about using its tools, by namespace, for the providers that
    /// said something.
    pub(crate) fn instructions(&self) -> HashMap<String, String> {
        self.providers
            .iter()
            .filter_map(|provider| {
                Some((provider.namespace().to_owned(), provider.instructions()?))
            })
            .collect()
    }
}

/// How long the catalog waits after a server's state changed before it is rebuilt: servers that
/// start together become ready within milliseconds of each other, and one rebuild serves them all.
const CATALOG_SETTLE: std::time::Duration = std::time::Duration::from_millis(5);

/// Rebuilds the catalog whenever a provider's state or tools change, until the gateway is gone
/// (and its cache with it).
/// An execution reads the catalog on its path; built there, the first execution after the
/// servers started (and after each change) waited about a millisecond for the declarations,
/// the search index and the manifest of every tool.
async fn keep_catalog_current(
    cache: std::sync::Weak<CatalogCache>,
    mut changes: Vec<tokio::sync::watch::Receiver<u64>>,
) {
    loop {
        {
            let Some(cache) = cache.upgrade() else {
                return;
            };
            // At once when the catalog is current already.
            cache.current_catalog().await;
        }
        if changes.is_empty() {
            // Providers whose tools never change: the one catalog stays.
            return;
        }
        let changed = changes
            .iter_mut()
            .map(|channel| Box::pin(channel.changed()));
        let (changed, _, _) = futures::future::select_all(changed).await;
        if changed.is_err() {
            return;
        }
        tokio::time::sleep(CATALOG_SETTLE).await;
        for channel in &mut changes {
            channel.borrow_and_update();
        }
    }
}
