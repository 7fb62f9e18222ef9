//! The gateway: what one toolweave is made of (upstream servers, the catalog cache, discovery,
//! the executor, the limits, the audit log) and its public face; each part does its own work.

use std::sync::Arc;

use toolweave_catalog::{Catalog, Flavor};
use toolweave_config::{Limits, Policy};
use toolweave_upstream::UpstreamManager;

use crate::audit::AuditLog;
use crate::catalog_cache::{CatalogCache, Unavailable};
use crate::catalog_state::CatalogState;
use crate::discovery::{DescribeAnswer, Discovery, SearchAnswer};
use crate::error::DiscoveryError;
use crate::executor::Executor;
use crate::pins::{HeldTool, ToolPins};
use crate::provider::ToolProvider;

/// Everything an execution, a search or a describe needs. Shared as `Arc<Gateway>`; made by
/// [`Gateway::builder`].
pub struct Gateway {
    /// The MCP servers' manager (one with no servers when there are none): their status, roots,
    /// client capabilities and shutdown. Their tools reach the catalog through their providers.
    pub(crate) upstream: Arc<UpstreamManager>,
    /// The providers and the snapshot of their tools, kept current.
    pub(crate) catalogs: Arc<CatalogCache>,
    pub(crate) limits: Limits,
    /// Where each execution is recorded, when it is.
    pub(crate) audit: Option<AuditLog>,
    /// How `llm.ask` and `llm.think` are answered: budgets, system prompts, provider.
    pub(crate) llm: Arc<crate::llm::LlmOptions>,
    /// Where guest code runs.
    pub(crate) executor: Arc<dyn Executor>,
    /// Who approves calls to destructive tools when an execution names nobody.
    pub(crate) approver: Option<Arc<dyn crate::Approver>>,
    /// What is replaced by tokens in what the model reads, when anything is.
    pub(crate) redaction: Option<crate::redaction::Redaction>,
    /// Search and describe over the catalog, for the client and for code.
    pub(crate) discovery: Discovery,
    /// Told about every tool call of guest code, once something measures them.
    pub(crate) observer: std::sync::OnceLock<Arc<dyn crate::Observer>>,
    /// The store and result handles of executions that name no session state of their own
    /// (a program that embeds toolweave and runs code without one): made when first used.
    pub(crate) own_state: std::sync::OnceLock<Arc<crate::SessionState>>,
}

/// What a gateway is made of; the builder checks it and hands it to [`Gateway::assemble`].
pub(crate) struct Parts {
    pub(crate) upstream: Arc<UpstreamManager>,
    pub(crate) providers: Vec<Arc<dyn ToolProvider>>,
    pub(crate) limits: Limits,
    pub(crate) policy: Policy,
    pub(crate) pins: Option<ToolPins>,
    pub(crate) audit: Option<AuditLog>,
    pub(crate) llm: crate::llm::LlmOptions,
    pub(crate) executor: Arc<dyn Executor>,
    pub(crate) approver: Option<Arc<dyn crate::Approver>>,
    pub(crate) redaction: Option<crate::redaction::Redaction>,
}

impl Gateway {
    /// The gateway of `parts`, whose catalog follows its providers from now on (when called
    /// within a tokio runtime).
    pub(crate) fn assemble(parts: Parts) -> Arc<Self> {
        let Parts {
            upstream,
            providers,
            limits,
            policy,
            pins,
            audit,
            llm,
            executor,
            approver,
            redaction,
        } = parts;
        let installed: crate::catalog_cache::Installed = {
            let executor = executor.clone();
            Box::new(move |state: &CatalogState| executor.expect(&state.manifest()))
        };
        let catalogs = CatalogCache::start(providers, policy, pins, installed);
        Arc::new(Self {
            upstream,
            discovery: Discovery::new(catalogs.clone(), limits.max_result_bytes),
            catalogs,
            audit,
            llm: Arc::new(llm),
            executor,
            approver,
            redaction,
            limits,
            observer: std::sync::OnceLock::new(),
            own_state: std::sync::OnceLock::new(),
        })
    }

    /// The namespaces of every provider (MCP servers by their configured names), in order.
    pub fn servers(&self) -> &[String] {
        self.catalogs.servers()
    }

    /// Stops every upstream server and waits until the audit log holds every execution so far.
    pub async fn shutdown(&self) {
        self.upstream.shutdown().await;
        if let Some(audit) = self.audit.clone() {
            let _ = tokio::task::spawn_blocking(move || audit.flush()).await;
        }
    }

    /// The audit log, when executions are recorded.
    pub fn audit(&self) -> Option<&AuditLog> {
        self.audit.as_ref()
    }

    /// The rules on which upstream tools guest code may see and call.
    pub fn policy(&self) -> &Policy {
        self.catalogs.policy()
    }

    /// The limits every execution runs under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// A new, empty store and set of result handles for one client session, bounded by this
    /// gateway's limits.
    pub fn session_state(&self) -> Arc<crate::SessionState> {
        crate::SessionState::new(&self.limits)
    }

    /// Tells `observer` about every tool call of guest code from now on. One observer per
    /// gateway: `false` when one was set already (and is kept).
    pub fn observe(&self, observer: Arc<dyn crate::Observer>) -> bool {
        self.observer.set(observer).is_ok()
    }

    /// The worker processes waiting and busy, per kind (none with engine threads only).
    pub fn workers(&self) -> Vec<crate::WorkerCount> {
        self.executor.workers()
    }

    /// The MCP servers' manager (for status, roots and shutdown); one with no servers when the
    /// gateway has none.
    pub fn upstream(&self) -> &Arc<UpstreamManager> {
        &self.upstream
    }

    /// The guest namespaces, `(guest, configured)`, known without waiting for any server.
    pub fn namespaces(&self) -> Vec<(String, String)> {
        self.catalogs
            .snapshot()
            .catalog
            .namespaces()
            .map(|(guest, original)| (guest.to_owned(), original.to_owned()))
            .collect()
    }

    /// Ranked search over every tool (waits for servers still starting, up to
    /// [`DISCOVERY_WAIT`](crate::DISCOVERY_WAIT) after the gateway started), computed off the
    /// protocol thread; the answer stays within the result limit.
    pub async fn search(
        &self,
        query: String,
        limit: usize,
        flavor: Flavor,
    ) -> Result<SearchAnswer, DiscoveryError> {
        self.discovery.search(query, limit, flavor).await
    }

    /// The tier of the tool code calls by `name` (`server.tool`, guest or original names) in the
    /// catalog as it is now: whether its calls ask, and why. `None` for a name the catalog does
    /// not have (the policy keeps it out: see [`kept_out`](Self::kept_out)).
    pub fn tier_of(&self, name: &str) -> Option<crate::Tier> {
        let state = self.catalogs.snapshot();
        let entry = state.catalog.resolve(name)?;
        Some(crate::approval::tier(self.catalogs.policy(), entry))
    }

    /// The tools of ready servers that the policy keeps out of the catalog, as `server.tool`
    /// (original names), each with the reason.
    pub fn kept_out(&self) -> Vec<(String, String)> {
        self.catalogs
            .snapshot()
            .denied
            .iter()
            .map(|denied| {
                (
                    format!("{}.{}", denied.server, denied.tool),
                    denied.denial.to_string(),
                )
            })
            .collect()
    }

    /// The providers that are not ready now (starting or failed), so that an answer that lists
    /// tools can say whose tools are missing from it.
    pub fn unavailable(&self) -> Vec<Unavailable> {
        self.catalogs.unavailable()
    }

    /// The tools held out of the catalog now because their definitions changed since they were
    /// pinned (`toolweave trust` reviews them), in catalog order.
    pub fn held(&self) -> Vec<HeldTool> {
        self.catalogs.snapshot().held.clone()
    }

    /// Full declarations of the named tools. Names may be `server.tool`, `tools.server.tool`,
    /// `mcp__server__tool`, or a bare server name for all of its tools. At most
    /// [`MAX_DESCRIBE_NAMES`](crate::MAX_DESCRIBE_NAMES) different names of at most
    /// [`MAX_NAME_BYTES`](toolweave_catalog::MAX_NAME_BYTES) each; computed off the protocol
    /// thread; the answer stays within the result limit. With `schemas`, each tool also carries its
    /// JSON Schemas.
    pub async fn describe(
        &self,
        names: Vec<String>,
        flavor: Flavor,
        schemas: bool,
    ) -> Result<DescribeAnswer, DiscoveryError> {
        self.discovery.describe(names, flavor, schemas).await
    }

    /// What `read` makes of the catalog code sees now (the policy applied), given with the
    /// upstream state version it was built from. With `settle`, first waits for servers still
    /// starting as discovery does (until [`DISCOVERY_WAIT`](crate::DISCOVERY_WAIT) after the
    /// gateway started).
    pub async fn read_catalog<T>(&self, settle: bool, read: impl FnOnce(&Catalog, u64) -> T) -> T {
        let state = if settle {
            self.catalogs.settled_catalog().await
        } else {
            self.catalogs.current_catalog().await
        };
        read(&state.catalog, state.version)
    }

    /// TypeScript declarations of every tool, as one `.d.ts` (waits for servers still starting,
    /// up to [`DISCOVERY_WAIT`](crate::DISCOVERY_WAIT) after the gateway started).
    pub async fn declarations(&self, flavor: Flavor) -> String {
        let state = self.catalogs.settled_catalog().await;
        flavor.declarations(&state.catalog)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// The catalog is rebuilt when a server's state changes, not on the next execution's path:
    /// here a server that cannot start goes from starting to down, and the snapshot follows
    /// without anything asking for it.
    #[tokio::test]
    async fn the_catalog_follows_the_servers_without_waiting_for_an_execution() {
        let config = toolweave_config::parse_str(
            r#"{"mcpServers": {"gone": {"command": "/nonexistent/toolweave-test-server"}}}"#,
            std::path::Path::new("mcp.json"),
        )
        .expect("a valid config");
        let gateway = Gateway::builder()
            .mcp_servers(&config)
            .build()
            .expect("a gateway");
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let version = gateway.catalogs.version();
            // Version 1: the server is starting; past it, it has failed.
            if version > 1 && gateway.catalogs.snapshot().version == version {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the catalog stayed at version {} while the servers are at {version}",
                gateway.catalogs.snapshot().version
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
