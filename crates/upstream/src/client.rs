//! The client side of one upstream connection: who toolweave says it is, and what it does with
//! the notifications a server sends.

use std::sync::Arc;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::Notify;

/// The rmcp client handler of one upstream server.
pub(crate) struct UpstreamClient {
    server: String,
    /// Woken when the server announces a new tool list; the server's task lists tools again.
    tools_changed: Arc<Notify>,
}

impl UpstreamClient {
    /// A handler for `server` that signals `tools_changed` on `notifications/tools/list_changed`.
    pub(crate) fn new(server: String, tools_changed: Arc<Notify>) -> Self {
        Self {
            server,
            tools_changed,
        }
    }
}

impl ClientHandler for UpstreamClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolweave", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "the server announced a new tool list");
        // notify_one keeps one wake-up if the task is busy, so a burst of notices is one refresh.
        self.tools_changed.notify_one();
    }
}
