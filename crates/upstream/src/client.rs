//! The client side of one upstream connection: who toolweave says it is, and what it does with
//! the notifications a server sends.

use std::sync::Arc;

#[allow(deprecated)] // MCP logging: see `notices`.
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::Notify;

use crate::notices::Routes;

/// The rmcp client handler of one upstream server.
pub(crate) struct UpstreamClient {
    server: String,
    /// Woken when the server announces a new tool list; the server's task lists tools again.
    tools_changed: Arc<Notify>,
    /// Where progress and log notifications about calls in flight go.
    routes: Arc<Routes>,
}

impl UpstreamClient {
    /// A handler for `server` that signals `tools_changed` on `notifications/tools/list_changed`
    /// and passes progress and log notifications on through `routes`.
    pub(crate) fn new(server: String, tools_changed: Arc<Notify>, routes: Arc<Routes>) -> Self {
        Self {
            server,
            tools_changed,
            routes,
        }
    }
}

impl ClientHandler for UpstreamClient {
    fn get_info(&self) -> ClientConfig {
        // The newest version with an `initialize` handshake: rmcp's default (its latest) has none,
        // and is not one to name in `initialize`.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolweave", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "the server announced a new tool list");
        // notify_one keeps one wake-up if the task is busy, so a burst of notices is one refresh.
        self.tools_changed.notify_one();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.routes.progress(
            &self.server,
            &params.progress_token,
            params.progress,
            params.total,
            params.message,
        );
    }

    #[allow(deprecated)] // MCP logging: see `notices`.
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::debug!(server = %self.server, level = ?params.level, data = %params.data, "upstream log message");
        self.routes
            .log(&self.server, params.level, params.logger, params.data);
    }
}
