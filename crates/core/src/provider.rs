//! Tool providers: where the tools guest code calls come from.
//!
//! A [`ToolProvider`] is one namespace of tools: an MCP server ([`McpProvider`](crate::McpProvider)),
//! or functions of the host program ([`ClosureProvider`](crate::ClosureProvider)). The gateway
//! asks each provider for its tools and builds one catalog of them all; everything between guest
//! code and a call (name resolution, argument and result validation, the policy, approval,
//! budgets, the audit log, typings and search) happens in the gateway, the same for every
//! provider. A provider only lists its tools and answers the calls that reach it.

use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, ClientRequest, ServerResult};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use toolweave_catalog::ToolDefinition;
use toolweave_upstream::{Capability, Listener, Notice};

use crate::error::ProviderError;

/// A source of tools under one namespace: guest code calls them as `tools.<namespace>.<tool>`.
///
/// Implementations answer; the gateway decides. A call reaches [`call`](Self::call) only once its
/// name resolved to one of this provider's tools, its arguments are an object that matches the
/// tool's `inputSchema`, the policy admits it, approval was given when the tool is destructive,
/// and the execution's budgets allow it. What the call returns is measured, checked against the
/// tool's `outputSchema` and converted by the gateway too.
pub trait ToolProvider: Send + Sync + 'static {
    /// The namespace its tools are under, as given (the gateway makes a guest identifier of it).
    fn namespace(&self) -> &str;

    /// Where the provider stands now. A provider that is not [`Ready`](ProviderState::Ready) has
    /// no tools in the catalog; a call to one of its tools waits for it through
    /// [`tools`](Self::tools).
    fn state(&self) -> ProviderState {
        ProviderState::Ready
    }

    /// Its tools, waiting (bounded) while it starts; or why it has none.
    fn tools(&self) -> BoxFuture<'_, Result<Vec<ToolDefinition>, ProviderError>>;

    /// Calls `tool` (its name as [`tools`](Self::tools) lists it) with `arguments`. The answer
    /// is an MCP tool result: a failure of the tool itself is a result with `isError`, a failure
    /// to reach it is an `Err`.
    fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        context: CallContext,
    ) -> BoxFuture<'_, Result<CallToolResult, ProviderError>>;

    /// Waits (bounded) until the provider is ready or failed. Discovery waits for this a short
    /// while after the gateway starts, so the first search sees tools still being listed.
    fn settle(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }

    /// What the provider says about using its tools, shown when a model describes it as a whole.
    fn instructions(&self) -> Option<String> {
        None
    }

    /// A version number that changes whenever [`state`](Self::state) or the tools change, so the
    /// gateway rebuilds its catalog; `None` for a provider whose tools never change. Providers
    /// may share one channel (the gateway watches each channel once).
    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }

    /// Sends an MCP request other than a tool call (`resources/read`, `prompts/get`, their
    /// lists) that needs `capability`: what `resources.<namespace>` and `prompts.<namespace>`
    /// ask in guest code. Only MCP servers have resources and prompts; other providers refuse.
    fn request(
        &self,
        request: ClientRequest,
        capability: Capability,
        context: CallContext,
    ) -> BoxFuture<'_, Result<ServerResult, ProviderError>> {
        let _ = (request, context);
        let error = ProviderError::NotOffered {
            namespace: self.namespace().to_owned(),
            what: capability.name(),
        };
        Box::pin(std::future::ready(Err(error)))
    }
}

/// Where a provider stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderState {
    /// Starting: its tools are not known yet.
    Starting,
    /// Its tools can be listed and called.
    Ready,
    /// Not available, and why (naming the cause and what to change).
    Failed {
        /// The reason, as the model and the person read it.
        reason: String,
    },
    /// Stopped because the gateway is shutting down.
    Stopped,
}

/// What one call carries besides its tool and arguments.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// Cancelled when the execution no longer waits for the call (it ended, was cancelled, or
    /// hit a limit). A call still running then is abandoned.
    pub cancel: CancellationToken,
    /// Where progress and log notices about the call go: the MCP client's `execute_code`
    /// request, when there is one.
    pub listener: Option<Listener>,
    /// When the gateway took the call (after approval, if it was asked): a provider with a
    /// per-call timeout counts from here.
    pub taken: tokio::time::Instant,
    /// The namespace of the provider called.
    pub namespace: String,
    /// The tool called, as the provider lists it.
    pub tool: String,
}

impl CallContext {
    /// A context for calling `tool` of `namespace` directly (outside an execution): never
    /// cancelled, and its progress goes nowhere.
    pub fn new(namespace: impl Into<String>, tool: impl Into<String>) -> Self {
        Self {
            cancel: CancellationToken::new(),
            listener: None,
            taken: tokio::time::Instant::now(),
            namespace: namespace.into(),
            tool: tool.into(),
        }
    }

    /// Reports progress of the call (as MCP's `notifications/progress` counts it: `progress`
    /// rising, out of `total` when known). It reaches the client as progress of the execution.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if let Some(listener) = &self.listener {
            listener.notify(Notice::Progress {
                server: self.namespace.clone(),
                tool: self.tool.clone(),
                progress,
                total,
                message,
            });
        }
    }
}
