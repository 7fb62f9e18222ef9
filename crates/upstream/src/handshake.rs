//! The MCP handshake with an upstream server, whatever its transport: `initialize`, then its
//! first tool list, or why they failed.

use futures::future::BoxFuture;
use rmcp::RoleClient;
use rmcp::model::Tool;
use rmcp::service::RunningService;

use crate::client::UpstreamClient;
use crate::decode::Method;
use crate::remote::{HttpFailure, find_failure};
use crate::wire::Wire;

/// The MCP session once `initialize` and `tools/list` are done, or why they failed.
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
