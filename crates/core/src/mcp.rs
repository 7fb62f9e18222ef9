//! MCP servers as tool providers: one [`McpProvider`] per configured server, over the upstream
//! manager that runs them all.
//!
//! What only MCP has stays here and in the manager: servers that start in the background and
//! restart on use, per-tool timeouts, resources and prompts, server instructions, tool list
//! changes, and the requests a server makes of the client (elicitation, sampling, roots), which
//! follow the call's [`Listener`](toolweave_upstream::Listener) to its client session.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, ClientRequest, ServerResult};
use serde_json::{Map, Value};
use toolweave_catalog::ToolDefinition;
use toolweave_upstream::{CallOptions, Capability, ServerState, UpstreamManager};

use crate::error::ProviderError;
use crate::provider::{CallContext, ProviderState, ToolProvider};

/// One configured MCP server, as a provider of tools.
pub struct McpProvider {
    upstream: Arc<UpstreamManager>,
    server: String,
}

impl McpProvider {
    /// Server `server` of `upstream` (its name as configured).
    pub fn new(upstream: Arc<UpstreamManager>, server: impl Into<String>) -> Self {
        Self {
            upstream,
            server: server.into(),
        }
    }

    /// One provider for each server of `upstream`, in config order.
    pub fn all(upstream: &Arc<UpstreamManager>) -> Vec<Self> {
        upstream
            .server_names()
            .into_iter()
            .map(|server| Self::new(upstream.clone(), server))
            .collect()
    }

    fn status(&self) -> Option<toolweave_upstream::ServerStatus> {
        self.upstream
            .status()
            .into_iter()
            .find(|status| status.name == self.server)
    }

    fn options(context: &CallContext) -> CallOptions<'_> {
        CallOptions {
            timeout: None,
            cancel: context.cancel.clone(),
            listener: context.listener.as_ref(),
            taken: Some(context.taken),
        }
    }
}

impl ToolProvider for McpProvider {
    fn namespace(&self) -> &str {
        &self.server
    }

    fn state(&self) -> ProviderState {
        match self.status().map(|status| status.state) {
            Some(ServerState::Ready { .. }) => ProviderState::Ready,
            Some(ServerState::Starting) => ProviderState::Starting,
            Some(ServerState::Failed {
                error,
                failures,
                next_try_in,
                ..
            }) => ProviderState::Failed {
                reason: match failures {
                    0 | 1 => error.to_string(),
                    _ => toolweave_upstream::failed_text(&error, failures, next_try_in),
                },
            },
            Some(ServerState::Stopped) | None => ProviderState::Stopped,
        }
    }

    fn tools(&self) -> BoxFuture<'_, Result<Vec<ToolDefinition>, ProviderError>> {
        Box::pin(async move { Ok(self.upstream.tools(&self.server).await?) })
    }

    fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        context: CallContext,
    ) -> BoxFuture<'_, Result<CallToolResult, ProviderError>> {
        let tool = tool.to_owned();
        Box::pin(async move {
            let options = Self::options(&context);
            Ok(self
                .upstream
                .call_tool_with(&self.server, &tool, Some(arguments), options)
                .await?)
        })
    }

    fn settle(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.upstream.settle_server(&self.server))
    }

    fn instructions(&self) -> Option<String> {
        self.status()?.instructions
    }

    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.upstream.subscribe())
    }

    fn request(
        &self,
        request: ClientRequest,
        capability: Capability,
        context: CallContext,
    ) -> BoxFuture<'_, Result<ServerResult, ProviderError>> {
        Box::pin(async move {
            let method = request.method().to_owned();
            let options = Self::options(&context);
            Ok(self
                .upstream
                .request(&self.server, &method, request, capability, options)
                .await?)
        })
    }
}
