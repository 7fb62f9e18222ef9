//! The client side of one upstream connection: who toolweave says it is, what it says it
//! supports, what it does with the notifications a server sends, and how it answers the server's
//! requests (passed on to a client session: `requests.rs`).

// Logging, sampling and roots are deprecated by SEP-2577 for the newest protocol version; servers
// speaking 2025-11-25 and before still use them.
#![allow(deprecated)]

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    ClientConfig, CreateMessageRequestParams, CreateMessageResult, CustomRequest, CustomResult,
    ElicitRequestParams, ElicitResult, ErrorCode, ErrorData, Implementation, JsonObject,
    ListRootsResult, ProgressNotificationParam, ProtocolVersion, TASKS_EXTENSION_ID,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::notices::Routes;
use crate::requests::{
    Clients, ForwardedAnswer, ForwardedRequest, Refusal, RequestKind, Route, forward,
};
use crate::wire::UNREADABLE_REQUEST;

/// The rmcp client handler of one upstream server.
#[derive(Clone)]
pub(crate) struct UpstreamClient {
    server: String,
    /// Woken when the server announces a new tool list; the server's task lists tools again.
    tools_changed: Arc<Notify>,
    /// Where progress and log notifications about calls in flight go, and the session its
    /// requests go to.
    routes: Arc<Routes>,
    /// The client sessions toolweave serves.
    clients: Arc<Clients>,
    /// How long a client may take to answer a request made outside any call.
    outside_calls: Duration,
}

impl UpstreamClient {
    /// A handler for `server` that signals `tools_changed` on `notifications/tools/list_changed`,
    /// passes progress and log notifications on through `routes`, and requests to a session of
    /// `clients` (one outside any call answering within `outside_calls`).
    pub(crate) fn new(
        server: String,
        tools_changed: Arc<Notify>,
        routes: Arc<Routes>,
        clients: Arc<Clients>,
        outside_calls: Duration,
    ) -> Self {
        Self {
            server,
            tools_changed,
            routes,
            clients,
            outside_calls,
        }
    }

    /// Passes `request` on to the client session it is for, and that session's answer back;
    /// a JSON-RPC error that says why when it cannot be.
    async fn pass_on(
        &self,
        request: ForwardedRequest,
        context: RequestContext<RoleClient>,
    ) -> Result<ForwardedAnswer, ErrorData> {
        let kind = request.kind();
        let route = match (self.routes.route(), kind) {
            // Roots are the session's, not a call's: a server asks for them when it starts or
            // when the client says they changed, whatever calls are in flight. Such a request
            // does not end with a call; the client has the call timeout to answer it.
            (Ok(route), RequestKind::Roots) => Ok(Route {
                cancel: CancellationToken::new(),
                limit: Some(self.outside_calls),
                ..route
            }),
            (Err(Refusal::NoCall | Refusal::NoClient), RequestKind::Roots) => self
                .clients
                .only()
                .ok_or(Refusal::NoCall)
                .map(|client| Route {
                    client,
                    cancel: CancellationToken::new(),
                    limit: Some(self.outside_calls),
                }),
            (route, _) => route,
        };
        let answer = match route {
            Ok(route) => forward(&self.server, request, route, context.ct).await,
            Err(refusal) => Err(refusal),
        };
        answer.map_err(|refusal| {
            tracing::warn!(server = %self.server, method = kind.method(), "a request from the server was not answered by a client: {refusal}");
            refusal.into_error(kind)
        })
    }
}

/// Why a request rmcp could not read as one it knows is answered with an error: a request the
/// wire could not read ([`UNREADABLE_REQUEST`], with what was wrong), a known request whose
/// params do not read (rmcp reads those as custom requests), or a method toolweave does not
/// support.
fn custom_request_error(request: &CustomRequest) -> ErrorData {
    let param = |key: &str| {
        request
            .params
            .as_ref()
            .and_then(|params| params.get(key))
            .and_then(serde_json::Value::as_str)
    };
    let params = || request.params.clone().unwrap_or_default();
    let fault = match request.method.as_str() {
        UNREADABLE_REQUEST => {
            let method = param("method").unwrap_or("a");
            let fault = param("fault").unwrap_or("it cannot be read");
            return ErrorData::invalid_request(
                format!("toolweave could not read the server's {method} request: {fault}"),
                None,
            );
        }
        "elicitation/create" => serde_json::from_value::<ElicitRequestParams>(params()).err(),
        "sampling/createMessage" => {
            serde_json::from_value::<CreateMessageRequestParams>(params()).err()
        }
        _ => None,
    };
    match fault {
        Some(fault) => ErrorData::invalid_params(
            format!(
                "toolweave could not read the server's {} request: its params are not what the \
                 method takes ({fault})",
                request.method
            ),
            None,
        ),
        None => ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "toolweave does not support the request {:?}",
                request.method
            ),
            None,
        ),
    }
}

/// The answer a client gave to another kind of request than was asked.
fn mismatched() -> ErrorData {
    ErrorData::internal_error(
        "toolweave received an answer of another kind than was asked",
        None,
    )
}

impl ClientHandler for UpstreamClient {
    fn get_info(&self) -> ClientConfig {
        // The tasks extension is toolweave's own: it waits for a task's result itself (`task.rs`).
        let mut capabilities = self.clients.capabilities();
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
        // The newest version with an `initialize` handshake, for a server that does not speak MCP
        // 2026-07-28 (`handshake::lifecycle` asks `server/discover` first): rmcp's default (its
        // latest) has none, and is not one to name in `initialize`.
        ClientConfig::new(
            capabilities,
            Implementation::new("toolweave", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match self
            .pass_on(ForwardedRequest::Elicitation(request), context)
            .await?
        {
            ForwardedAnswer::Elicitation(answer) => Ok(answer),
            _ => Err(mismatched()),
        }
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        match self
            .pass_on(ForwardedRequest::Sampling(params), context)
            .await?
        {
            ForwardedAnswer::Sampling(answer) => Ok(*answer),
            _ => Err(mismatched()),
        }
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        match self.pass_on(ForwardedRequest::Roots, context).await? {
            ForwardedAnswer::Roots(answer) => Ok(answer),
            _ => Err(mismatched()),
        }
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<CustomResult, ErrorData> {
        let error = custom_request_error(&request);
        tracing::warn!(server = %self.server, method = %request.method, "the server's request was answered with an error: {}", error.message);
        Err(error)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_that_cannot_be_read_are_answered_with_why() {
        let unreadable = CustomRequest::new(
            UNREADABLE_REQUEST,
            Some(
                json!({ "method": "elicitation/create", "fault": "a JSON-RPC error without a message" }),
            ),
        );
        let error = custom_request_error(&unreadable);
        assert_eq!(error.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(
            error.message,
            "toolweave could not read the server's elicitation/create request: a JSON-RPC error \
             without a message"
        );
        // rmcp reads a known request whose params do not read as a custom one.
        let bad = CustomRequest::new(
            "sampling/createMessage",
            Some(json!({ "maxTokens": "ten" })),
        );
        let error = custom_request_error(&bad);
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(
            error.message.starts_with(
                "toolweave could not read the server's sampling/createMessage request: its params \
                 are not what the method takes ("
            ),
            "{}",
            error.message
        );
        let other = CustomRequest::new("tasks/get", None);
        assert_eq!(
            custom_request_error(&other).code,
            ErrorCode::METHOD_NOT_FOUND
        );
    }
}
