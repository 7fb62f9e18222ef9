//! Requests of upstream servers (elicitation, sampling, roots), passed on to the client of one
//! session through rmcp's peer of that session.
//!
//! The upstream crate decides which session a request is for (the one whose calls the server is
//! working on); this side checks that the client declared the capability the request needs,
//! sends it, and cancels it at the client when the calls it was made for end. A request made
//! while an `execute_code` request runs is sent in that request's name, so over streamable HTTP
//! it travels on that request's event stream, where the client waits for the answer. An
//! elicitation's message is prefixed with the server's name: the client sees toolweave asking, and
//! the person should know which server wants to know. A session's roots are asked once and kept
//! until the client says they changed.
//!
//! What a client supports is read from each request when it declares it there (MCP 2026-07-28),
//! else from its `initialize`. A 2026-07-28 client takes no requests from the server: what is
//! asked of it during a call becomes a question of that call's multi round-trip request
//! (`rounds.rs`).

// Sampling and roots are deprecated by SEP-2577 for the newest protocol version; clients speaking
// 2025-11-25 and before still serve them.
#![allow(deprecated)]

use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use rmcp::RoleServer;
use rmcp::model::{
    CancelledNotificationParam, ClientCapabilities, ClientResult, CreateMessageRequest,
    ElicitRequest, ElicitRequestParams, ElicitResult, GetExtensions, ListRootsRequest,
    ListRootsResult, RequestId, ServerRequest,
};
use rmcp::service::{
    ElicitationMode, OriginatingRequestId, Peer, PeerRequestOptions, ServiceError,
};
use toolweave_core::{
    CancellationToken, ClientSession, ForwardedAnswer, ForwardedRequest, Refusal,
};

use crate::rounds::Mailbox;

/// What one client session keeps for requests from upstream servers.
#[derive(Debug, Default)]
pub(crate) struct SessionRequests {
    /// The client's roots, once asked; forgotten when it says they changed.
    roots: Mutex<Option<ListRootsResult>>,
}

impl SessionRequests {
    /// The client said its roots changed: the next `roots/list` asks it again.
    pub(crate) fn roots_changed(&self) {
        *self.roots.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    fn roots(&self) -> Option<ListRootsResult> {
        self.roots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn keep_roots(&self, roots: &ListRootsResult) {
        *self.roots.lock().unwrap_or_else(PoisonError::into_inner) = Some(roots.clone());
    }
}

/// One client session as upstream servers' requests reach it.
#[derive(Debug, Clone)]
pub(crate) struct ClientPeer {
    session: u64,
    peer: Peer<RoleServer>,
    /// The `execute_code` request whose calls the asking server works on, when there is one.
    originating: Option<RequestId>,
    state: Arc<SessionRequests>,
    /// What the request being served declared it supports, when it declared it itself (MCP
    /// 2026-07-28); else what the client's `initialize` declared.
    declared: Option<ClientCapabilities>,
    /// Where questions go for a client that speaks MCP 2026-07-28: the multi round-trip request
    /// of the call being served, when there is one.
    mailbox: Option<Mailbox>,
    /// Whether the client speaks MCP 2026-07-28 or later (and so takes no requests).
    modern: bool,
}

impl ClientPeer {
    /// Session number `session`, reached through `peer`; requests are sent in the name of
    /// `originating`, when given.
    pub(crate) fn new(
        session: u64,
        peer: Peer<RoleServer>,
        originating: Option<RequestId>,
        state: Arc<SessionRequests>,
    ) -> Self {
        Self {
            session,
            peer,
            originating,
            state,
            declared: None,
            mailbox: None,
            modern: false,
        }
    }

    /// The same, for a request that declared `declared` (when it declared anything itself), of a
    /// client that speaks MCP 2026-07-28 or later when `modern`, whose questions go to `mailbox`.
    pub(crate) fn for_request(
        mut self,
        declared: Option<ClientCapabilities>,
        modern: bool,
        mailbox: Option<Mailbox>,
    ) -> Self {
        self.declared = declared;
        self.modern = modern;
        self.mailbox = mailbox;
        self
    }

    /// rmcp's peer of the session, for notifications.
    pub(crate) fn peer(&self) -> &Peer<RoleServer> {
        &self.peer
    }

    fn capabilities(&self) -> ClientCapabilities {
        self.declared.clone().unwrap_or_else(|| {
            self.peer
                .peer_info()
                .map(|info| info.capabilities.clone())
                .unwrap_or_default()
        })
    }

    /// The modes of elicitation the client supports.
    pub(crate) fn elicitation_modes(&self) -> Vec<ElicitationMode> {
        let Some(declared) = self.capabilities().elicitation else {
            return Vec::new();
        };
        let mut modes = Vec::new();
        // A client that declares elicitation with no mode supports forms (as before modes).
        if declared.form.is_some() || declared.url.is_none() {
            modes.push(ElicitationMode::Form);
        }
        if declared.url.is_some() {
            modes.push(ElicitationMode::Url);
        }
        modes
    }

    /// Asks toolweave's own question (an approval) by elicitation; the client's answer.
    pub(crate) async fn elicit_own(
        &self,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, Refusal> {
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
        match self.send(request, CancellationToken::new()).await? {
            ClientResult::ElicitResult(answer) => Ok(answer),
            _ => Err(mismatched()),
        }
    }

    /// Sends `request` to the client and waits for its answer, or for `cancel` (then the client
    /// is told the request was cancelled).
    async fn send(
        &self,
        mut request: ServerRequest,
        cancel: CancellationToken,
    ) -> Result<ClientResult, Refusal> {
        if let Some(mailbox) = &self.mailbox {
            return mailbox.ask(request, &cancel).await;
        }
        if self.modern {
            return Err(Refusal::SessionGone(
                "the client speaks MCP 2026-07-28, which takes questions only as part of a call it                  made (a multi round-trip request), and no call of its that could carry this one                  is in flight"
                    .to_owned(),
            ));
        }
        if let Some(id) = &self.originating {
            request
                .extensions_mut()
                .insert(OriginatingRequestId(id.clone()));
        }
        // rmcp names an outgoing request after the request its task is serving (a task-local),
        // which here is the upstream server's own request: it means nothing to the client, and
        // over HTTP would send this request down the wrong stream. A task of its own keeps the
        // name given above.
        let peer = self.peer.clone();
        let sent = tokio::spawn(async move {
            peer.send_cancellable_request(request, PeerRequestOptions::no_options())
                .await
        })
        .await;
        let handle = match sent {
            Ok(handle) => handle.map_err(gone)?,
            Err(error) => return Err(Refusal::SessionGone(error.to_string())),
        };
        let id = handle.id.clone();
        tokio::select! {
            answer = handle.await_response() => answer.map_err(|error| match error {
                ServiceError::McpError(error) => Refusal::Client(error),
                other => gone(other),
            }),
            () = cancel.cancelled() => {
                let notice = CancelledNotificationParam::new(
                    Some(id),
                    Some("the call it was made for ended".to_owned()),
                );
                if let Err(error) = self.peer.notify_cancelled(notice).await {
                    tracing::debug!(%error, "could not tell the client a request was cancelled");
                }
                Err(Refusal::CallEnded)
            }
        }
    }

    async fn elicit(
        &self,
        server: &str,
        params: ElicitRequestParams,
        cancel: CancellationToken,
    ) -> Result<ForwardedAnswer, Refusal> {
        let Some(declared) = self.capabilities().elicitation else {
            return Err(Refusal::Unsupported {
                capability: "elicitation",
            });
        };
        // A client that declares elicitation with no mode supports forms (as before modes).
        let form = declared.form.is_some() || declared.url.is_none();
        let params = match params {
            ElicitRequestParams::FormElicitationParams {
                meta,
                message,
                requested_schema,
            } if form => ElicitRequestParams::FormElicitationParams {
                meta,
                message: format!("[{server}] {message}"),
                requested_schema,
            },
            ElicitRequestParams::UrlElicitationParams {
                meta,
                message,
                url,
                elicitation_id,
            } if declared.url.is_some() => ElicitRequestParams::UrlElicitationParams {
                meta,
                message: format!("[{server}] {message}"),
                url,
                elicitation_id,
            },
            ElicitRequestParams::FormElicitationParams { .. } => {
                return Err(Refusal::Unsupported {
                    capability: "form elicitation",
                });
            }
            ElicitRequestParams::UrlElicitationParams { .. } => {
                return Err(Refusal::Unsupported {
                    capability: "URL elicitation",
                });
            }
            // A mode of a later protocol version, which this version of toolweave cannot check.
            _ => {
                return Err(Refusal::Unsupported {
                    capability: "this mode of elicitation",
                });
            }
        };
        match self
            .send(
                ServerRequest::ElicitRequest(ElicitRequest::new(params)),
                cancel,
            )
            .await?
        {
            ClientResult::ElicitResult(answer) => Ok(ForwardedAnswer::Elicitation(answer)),
            _ => Err(mismatched()),
        }
    }

    async fn sample(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        cancel: CancellationToken,
    ) -> Result<ForwardedAnswer, Refusal> {
        let Some(declared) = self.capabilities().sampling else {
            return Err(Refusal::Unsupported {
                capability: "sampling",
            });
        };
        if (params.tools.is_some() || params.tool_choice.is_some()) && declared.tools.is_none() {
            return Err(Refusal::Unsupported {
                capability: "sampling with tools",
            });
        }
        let request = ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params));
        match self.send(request, cancel).await? {
            ClientResult::CreateMessageResult(answer) => Ok(ForwardedAnswer::Sampling(answer)),
            _ => Err(mismatched()),
        }
    }

    async fn list_roots(&self, cancel: CancellationToken) -> Result<ForwardedAnswer, Refusal> {
        if self.capabilities().roots.is_none() {
            return Err(Refusal::Unsupported {
                capability: "roots",
            });
        }
        if let Some(roots) = self.state.roots() {
            return Ok(ForwardedAnswer::Roots(roots));
        }
        let request = ServerRequest::ListRootsRequest(ListRootsRequest {
            method: Default::default(),
            extensions: Default::default(),
        });
        match self.send(request, cancel).await? {
            ClientResult::ListRootsResult(roots) => {
                self.state.keep_roots(&roots);
                Ok(ForwardedAnswer::Roots(roots))
            }
            _ => Err(mismatched()),
        }
    }
}

/// The client could not be reached.
fn gone(error: ServiceError) -> Refusal {
    Refusal::SessionGone(error.to_string())
}

/// The client answered with another kind of result than was asked.
fn mismatched() -> Refusal {
    Refusal::SessionGone("it answered with another kind of result than was asked".to_owned())
}

impl ClientSession for ClientPeer {
    fn session(&self) -> u64 {
        self.session
    }

    fn ask(
        &self,
        server: &str,
        request: ForwardedRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<ForwardedAnswer, Refusal>> {
        let client = self.clone();
        let server = server.to_owned();
        Box::pin(async move {
            match request {
                ForwardedRequest::Elicitation(params) => {
                    client.elicit(&server, params, cancel).await
                }
                ForwardedRequest::Sampling(params) => client.sample(params, cancel).await,
                ForwardedRequest::Roots => client.list_roots(cancel).await,
            }
        })
    }
}
