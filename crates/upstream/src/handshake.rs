//! The MCP handshake with an upstream server, whatever its transport: `server/discover` (MCP
//! 2026-07-28) or `initialize`, then its first tool list, or why they failed.

use futures::future::BoxFuture;
use rmcp::ClientLifecycleMode;
use rmcp::RoleClient;
use rmcp::model::{ProtocolVersion, Tool};
use rmcp::service::RunningService;

use crate::client::UpstreamClient;
use crate::decode::Method;
use crate::remote::{HttpFailure, find_failure};
use crate::wire::Wire;

/// How toolweave starts with a server over stdio or streamable HTTP: it asks `server/discover`,
/// and speaks MCP 2026-07-28 (no `initialize`; its protocol version and capabilities in every
/// request's `_meta`) with a server that offers it. A server that answers with an error, or not
/// within rmcp's 10 s, gets `initialize` with 2025-11-25 on the same connection. (An HTTP+SSE
/// server is of the 2024-11-05 transport, and gets `initialize` at once.)
pub(crate) fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

/// The MCP session once the handshake and `tools/list` are done, or why they failed.
pub(crate) type Handshake = BoxFuture<
    'static,
    Result<(RunningService<RoleClient, UpstreamClient>, Vec<Tool>), StartFailure>,
>;

/// Why a handshake failed.
#[derive(Debug)]
pub(crate) struct StartFailure {
    /// What went wrong, for the server's error.
    pub(crate) message: String,
    /// Whether the connection closed under it (then a process's exit status says more).
    pub(crate) connection_closed: bool,
    /// Whether a remote server wants a login toolweave does not have (`message` says why).
    pub(crate) needs_login: bool,
}

impl StartFailure {
    /// A failure in the protocol, on a connection that still stands.
    pub(crate) fn protocol(message: String) -> Self {
        Self {
            message,
            connection_closed: false,
            needs_login: false,
        }
    }

    /// A request over HTTP failed as `failure` says.
    pub(crate) fn remote(failure: HttpFailure) -> Self {
        Self {
            message: failure.cause,
            connection_closed: false,
            needs_login: failure.login,
        }
    }
}

/// Lists every tool (following pages) once `initialize` is done.
pub(crate) async fn list_tools(
    service: RunningService<RoleClient, UpstreamClient>,
    wire: &Wire,
) -> Result<(RunningService<RoleClient, UpstreamClient>, Vec<Tool>), StartFailure> {
    use rmcp::service::ServiceError;
    match service.peer().list_all_tools().await {
        Ok(tools) => Ok((service, tools)),
        Err(error) => {
            if let Some(malformed) = wire.take_unreadable_answer_to(Method::ListTools) {
                return Err(StartFailure::protocol(format!(
                    "its answer to tools/list cannot be read: {malformed}"
                )));
            }
            let failure = match &error {
                ServiceError::TransportSend(error) => find_failure(error),
                _ => None,
            };
            if let Some(failure) = failure.as_ref().filter(|failure| failure.login) {
                return Err(StartFailure::remote(failure.clone()));
            }
            Err(StartFailure {
                message: format!(
                    "its tools/list failed: {}",
                    failure.map_or_else(|| error.to_string(), |failure| failure.cause)
                ),
                connection_closed: matches!(
                    error,
                    ServiceError::TransportClosed | ServiceError::TransportSend(_)
                ),
                needs_login: false,
            })
        }
    }
}
