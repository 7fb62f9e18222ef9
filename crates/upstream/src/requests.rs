//! Requests an upstream server sends to the client: elicitation (`elicitation/create`), sampling
//! (`sampling/createMessage`) and roots (`roots/list`), passed on to an MCP client session that
//! toolweave serves.
//!
//! Which session a request is for follows the calls in flight, as progress does (`notices.rs`):
//! a server asks while it works on a call, so the request goes to the client session whose
//! execution made the calls in flight to that server. With none, or calls from several sessions
//! at once, it is refused with a JSON-RPC error that says why ([`Refusal`]); toolweave never asks
//! one client's user or model on behalf of another's call. An elicitation or sampling request
//! ends when the calls it was made for end (answered, timed out or cancelled), or when the server
//! cancels it. Roots are the session's rather than a call's: `roots/list` is not ended with a
//! call, and outside any call it goes to the one client session there is, when there is one.
//!
//! What toolweave tells upstream servers it supports ([`ClientSessions`]) depends on whom it
//! serves: over stdio, one client, whose capabilities are passed on as declared in its
//! `initialize` (an upstream server's `initialize` waits for that declaration, or for the first
//! request of a client speaking MCP 2026-07-28, which sends no `initialize` and declares its
//! capabilities on every request); over HTTP, sessions that come and go, so every capability is
//! declared and a session that lacks one gets its requests refused; with no client at all
//! (`toolweave run`, `servers`, `doctor`), none. A client that declares per request is treated as
//! HTTP sessions are: every capability is declared, and each request is checked against what it
//! carries.

// Sampling and roots are deprecated by SEP-2577 for the newest protocol version; servers speaking
// 2025-11-25 and before still send them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, ErrorCode, ErrorData, FormElicitationCapability,
    ListRootsResult, RootsCapabilities, SamplingCapability, UrlElicitationCapability,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How long an upstream server's `initialize` waits for the one client (stdio) to say what it
/// supports, before it goes ahead declaring nothing. A client sends `initialize` first thing; the
/// wait only matters for one that never does.
pub(crate) const DECLARATION_WAIT: Duration = Duration::from_secs(5);

/// Whom toolweave serves, which decides what it tells upstream servers it supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientSessions {
    /// No MCP client (`toolweave run`, `servers`, `doctor`): upstream servers are told toolweave
    /// supports none of elicitation, sampling and roots.
    #[default]
    None,
    /// One client over stdio: upstream servers are told what it declared in its `initialize`,
    /// and their start waits for that declaration (or for its first request, when it declares
    /// per request).
    One,
    /// Many sessions over HTTP, which come and go: upstream servers are told every capability,
    /// and a request that reaches a session lacking it is refused.
    Many,
}

/// What a request from an upstream server asks of the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// `elicitation/create`: a question for the person at the client.
    Elicitation,
    /// `sampling/createMessage`: a completion from the client's model.
    Sampling,
    /// `roots/list`: the client's roots (the folders it works in).
    Roots,
}

impl RequestKind {
    /// Its name in the audit log: `elicitation`, `sampling`, `roots`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Elicitation => "elicitation",
            Self::Sampling => "sampling",
            Self::Roots => "roots",
        }
    }

    /// Its JSON-RPC method.
    pub fn method(self) -> &'static str {
        match self {
            Self::Elicitation => "elicitation/create",
            Self::Sampling => "sampling/createMessage",
            Self::Roots => "roots/list",
        }
    }
}

/// A request from an upstream server, to pass on to a client session.
#[derive(Debug, Clone, PartialEq)]
pub enum ForwardedRequest {
    /// `elicitation/create`.
    Elicitation(ElicitRequestParams),
    /// `sampling/createMessage`.
    Sampling(CreateMessageRequestParams),
    /// `roots/list`.
    Roots,
}

impl ForwardedRequest {
    /// What it asks for.
    pub fn kind(&self) -> RequestKind {
        match self {
            Self::Elicitation(_) => RequestKind::Elicitation,
            Self::Sampling(_) => RequestKind::Sampling,
            Self::Roots => RequestKind::Roots,
        }
    }
}

/// The client's answer to a [`ForwardedRequest`].
#[derive(Debug, Clone, PartialEq)]
pub enum ForwardedAnswer {
    /// To `elicitation/create`.
    Elicitation(ElicitResult),
    /// To `sampling/createMessage`.
    Sampling(Box<CreateMessageResult>),
    /// To `roots/list`.
    Roots(ListRootsResult),
}

/// Why a request from an upstream server got no answer from a client. Each becomes the JSON-RPC
/// error the server reads ([`Refusal::into_error`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// No call of toolweave's to the server is in flight, so no client session is waiting on it.
    NoCall,
    /// Calls from several client sessions are in flight to the server: whose request this is
    /// cannot be told.
    SeveralSessions,
    /// The calls in flight come from no MCP client (`toolweave run`), which cannot be asked.
    NoClient,
    /// The client session does not support what is asked: it did not declare the capability.
    Unsupported {
        /// What the client lacks, e.g. `elicitation`, `URL elicitation`, `sampling with tools`.
        capability: &'static str,
    },
    /// The calls the request was made for ended (answered, timed out or cancelled) first.
    CallEnded,
    /// The server cancelled the request itself.
    Withdrawn,
    /// The client took longer than this to answer a request made outside any call.
    TimedOut(Duration),
    /// The client session could not be asked: it is gone, or sending failed.
    SessionGone(String),
    /// The client answered with this JSON-RPC error, passed on as it is.
    Client(ErrorData),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoCall => f.write_str(
                "no call of toolweave's to this server is in flight, so no client session is \
                 waiting on it; toolweave passes requests on only while a call of the session \
                 they are for is in flight",
            ),
            Self::SeveralSessions => f.write_str(
                "calls from several client sessions are in flight to this server, and which one \
                 this request is for cannot be told; send it while one session alone has calls \
                 in flight",
            ),
            Self::NoClient => f.write_str(
                "the call in flight comes from no MCP client (a program run by `toolweave run`), \
                 so there is nobody to ask",
            ),
            Self::Unsupported { capability } => write!(
                f,
                "the MCP client toolweave serves does not support {capability} (it did not \
                 declare that capability)"
            ),
            Self::CallEnded => f.write_str(
                "the call it was made for ended (answered, timed out or cancelled) before the \
                 client answered",
            ),
            Self::Withdrawn => f.write_str("the server cancelled it"),
            Self::TimedOut(limit) => write!(
                f,
                "the client did not answer within {} ms",
                limit.as_millis()
            ),
            Self::SessionGone(cause) => write!(f, "the client session could not be asked: {cause}"),
            Self::Client(error) => {
                write!(f, "the client answered with an error: {}", error.message)
            }
        }
    }
}

impl Refusal {
    /// The JSON-RPC error the server reads for its request of `kind`. A client's own error is
    /// passed on unchanged.
    pub fn into_error(self, kind: RequestKind) -> ErrorData {
        let code = match &self {
            Self::Client(error) => return error.clone(),
            Self::Unsupported { .. } => ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            Self::NoCall | Self::SeveralSessions | Self::NoClient => ErrorCode::INVALID_REQUEST,
            Self::CallEnded | Self::Withdrawn | Self::TimedOut(_) | Self::SessionGone(_) => {
                ErrorCode::INTERNAL_ERROR
            }
        };
        ErrorData::new(
            code,
            format!("toolweave did not pass {} on: {self}", kind.method()),
            None,
        )
    }

    /// The outcome as the audit log names it: `refused` when it never reached the client,
    /// `abandoned` when it was given up on, `error` when the client failed.
    pub fn outcome(&self) -> &'static str {
        match self {
            Self::NoCall | Self::SeveralSessions | Self::NoClient | Self::Unsupported { .. } => {
                "refused"
            }
            Self::CallEnded | Self::Withdrawn | Self::TimedOut(_) => "abandoned",
            Self::SessionGone(_) | Self::Client(_) => "error",
        }
    }
}

/// An MCP client session, as requests from upstream servers reach it. The server crate
/// implements it over rmcp's peer of the session.
pub trait ClientSession: Send + Sync + fmt::Debug {
    /// The session's number: executions of one session share it.
    fn session(&self) -> u64;

    /// Passes `request`, sent by upstream server `server`, to the client and waits for its
    /// answer. Once `cancel` fires the request is cancelled at the client and the answer is
    /// [`Refusal::CallEnded`].
    fn ask(
        &self,
        server: &str,
        request: ForwardedRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<ForwardedAnswer, Refusal>>;
}

/// The client sessions toolweave serves, as upstream connections see them: what to tell servers
/// it supports, and the session a `roots/list` outside any call goes to.
#[derive(Debug)]
pub(crate) struct Clients {
    serving: ClientSessions,
    /// Connected sessions by number.
    connected: Mutex<HashMap<u64, Arc<dyn ClientSession>>>,
    /// What the one client (stdio) declared, once it has.
    declared: watch::Sender<Option<ClientCapabilities>>,
}

impl Clients {
    /// Nobody connected yet.
    pub(crate) fn new(serving: ClientSessions) -> Self {
        Self {
            serving,
            connected: Mutex::default(),
            declared: watch::channel(None).0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Arc<dyn ClientSession>>> {
        // The map stays whole whatever panicked while the lock was held.
        self.connected
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// What upstream servers are told toolweave supports, now.
    pub(crate) fn capabilities(&self) -> ClientCapabilities {
        match self.serving {
            ClientSessions::None => ClientCapabilities::default(),
            ClientSessions::One => self
                .declared
                .borrow()
                .as_ref()
                .map(passed_on)
                .unwrap_or_default(),
            ClientSessions::Many => every_capability(),
        }
    }

    /// Waits, up to [`DECLARATION_WAIT`], until the one client has declared what it supports
    /// (stdio: its `initialize`, or its first request when it speaks MCP 2026-07-28); at once
    /// otherwise.
    pub(crate) async fn declared(&self) {
        if self.serving != ClientSessions::One {
            return;
        }
        let mut declared = self.declared.subscribe();
        let waited =
            tokio::time::timeout(DECLARATION_WAIT, declared.wait_for(Option::is_some)).await;
        if waited.is_err() {
            tracing::info!(
                "the MCP client has not sent initialize within {} ms; upstream servers start \
                 without elicitation, sampling or roots",
                DECLARATION_WAIT.as_millis()
            );
        }
    }

    /// A session connected, declaring `capabilities` once for the session, or (`None`) on each
    /// request it makes, which is checked against what it carries.
    pub(crate) fn connect(
        &self,
        session: Arc<dyn ClientSession>,
        capabilities: Option<&ClientCapabilities>,
    ) {
        self.declared.send_if_modified(|declared| {
            if declared.is_some() {
                return false;
            }
            *declared = Some(capabilities.cloned().unwrap_or_else(every_capability));
            true
        });
        self.lock().insert(session.session(), session);
    }

    /// A client that declares what it supports on each request (MCP 2026-07-28) is coming, before
    /// any session of its connects (it asked `server/discover`): over stdio, servers start now,
    /// told every capability, instead of waiting for a declaration it will never send.
    pub(crate) fn expect_per_request(&self) {
        self.declared.send_if_modified(|declared| {
            if declared.is_some() {
                return false;
            }
            *declared = Some(every_capability());
            true
        });
    }

    /// Session `session` ended.
    pub(crate) fn disconnect(&self, session: u64) {
        self.lock().remove(&session);
    }

    /// The one session connected, when there is exactly one.
    pub(crate) fn only(&self) -> Option<Arc<dyn ClientSession>> {
        let connected = self.lock();
        let mut sessions = connected.values();
        match (sessions.next(), sessions.next()) {
            (Some(session), None) => Some(session.clone()),
            _ => None,
        }
    }

    /// Whether upstream servers were told toolweave has roots (so a change is worth telling).
    pub(crate) fn has_roots(&self) -> bool {
        self.capabilities().roots.is_some()
    }
}

/// A session's place among the connected ones; leaving when dropped (the session ended).
#[derive(Debug)]
pub struct ClientConnection {
    clients: Arc<Clients>,
    session: u64,
}

impl ClientConnection {
    pub(crate) fn new(clients: Arc<Clients>, session: u64) -> Self {
        Self { clients, session }
    }
}

impl Drop for ClientConnection {
    fn drop(&mut self) {
        self.clients.disconnect(self.session);
    }
}

/// The capabilities a client declared that toolweave passes on: elicitation, sampling and
/// roots, as declared.
fn passed_on(declared: &ClientCapabilities) -> ClientCapabilities {
    let mut capabilities = ClientCapabilities::default();
    capabilities.elicitation = declared.elicitation.clone();
    capabilities.sampling = declared.sampling.clone();
    capabilities.roots = declared.roots.clone();
    capabilities
}

/// Everything toolweave can pass on, for sessions not known yet: form and URL elicitation,
/// sampling (without tools, which a session may lack), roots with change notices.
fn every_capability() -> ClientCapabilities {
    let mut capabilities = ClientCapabilities::default();
    let mut elicitation = ElicitationCapability::default();
    elicitation.form = Some(FormElicitationCapability::default());
    elicitation.url = Some(UrlElicitationCapability::default());
    capabilities.elicitation = Some(elicitation);
    capabilities.sampling = Some(SamplingCapability::default());
    let mut roots = RootsCapabilities::default();
    roots.list_changed = Some(true);
    capabilities.roots = Some(roots);
    capabilities
}

/// Passes `request` from `server` on along `route` and waits for the client's answer: until it
/// comes, the calls it was made for end (`route`'s token), or the server cancels it
/// (`withdrawn`).
pub(crate) async fn forward(
    server: &str,
    request: ForwardedRequest,
    route: Route,
    withdrawn: CancellationToken,
) -> Result<ForwardedAnswer, Refusal> {
    let cancel = route.cancel.child_token();
    let mut answer = route.client.ask(server, request, cancel.clone());
    let deadline = async {
        match route.limit {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        answer = &mut answer => answer,
        () = withdrawn.cancelled() => {
            cancel.cancel();
            let _ = answer.await;
            Err(Refusal::Withdrawn)
        }
        () = deadline => {
            cancel.cancel();
            let _ = answer.await;
            Err(Refusal::TimedOut(route.limit.unwrap_or_default()))
        }
    }
}

/// Where a request goes: the session, and what ends it.
pub(crate) struct Route {
    /// The client session to ask.
    pub(crate) client: Arc<dyn ClientSession>,
    /// Cancelled when the calls the request was made for end.
    pub(crate) cancel: CancellationToken,
    /// How long the client may take, for a request made outside any call.
    pub(crate) limit: Option<Duration>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_tell_the_server_why() {
        let error = Refusal::NoCall.into_error(RequestKind::Elicitation);
        assert_eq!(error.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(
            error.message,
            "toolweave did not pass elicitation/create on: no call of toolweave's to this server \
             is in flight, so no client session is waiting on it; toolweave passes requests on \
             only while a call of the session they are for is in flight"
        );
        let error = Refusal::Unsupported {
            capability: "sampling",
        }
        .into_error(RequestKind::Sampling);
        assert_eq!(error.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(
            error.message,
            "toolweave did not pass sampling/createMessage on: the MCP client toolweave serves \
             does not support sampling (it did not declare that capability)"
        );
        let own = ErrorData::new(ErrorCode(-1), "user closed the dialog", None);
        assert_eq!(
            Refusal::Client(own.clone()).into_error(RequestKind::Elicitation),
            own
        );
    }

    #[test]
    fn what_upstream_servers_are_told() {
        assert_eq!(
            Clients::new(ClientSessions::None).capabilities(),
            ClientCapabilities::default()
        );
        let many = Clients::new(ClientSessions::Many).capabilities();
        assert!(many.elicitation.is_some() && many.sampling.is_some() && many.roots.is_some());

        // Over stdio: nothing until the client declares, then what it declared (and only the
        // capabilities toolweave passes on).
        let one = Clients::new(ClientSessions::One);
        assert_eq!(one.capabilities(), ClientCapabilities::default());
        let mut declared = ClientCapabilities::default();
        declared.roots = Some(RootsCapabilities::default());
        declared.experimental = Some(Default::default());
        #[derive(Debug)]
        struct Nobody;
        impl ClientSession for Nobody {
            fn session(&self) -> u64 {
                7
            }
            fn ask(
                &self,
                _server: &str,
                _request: ForwardedRequest,
                _cancel: CancellationToken,
            ) -> BoxFuture<'static, Result<ForwardedAnswer, Refusal>> {
                Box::pin(async { Err(Refusal::NoCall) })
            }
        }
        one.connect(Arc::new(Nobody), Some(&declared));
        let told = one.capabilities();
        assert!(told.roots.is_some());
        assert!(told.elicitation.is_none() && told.sampling.is_none());
        assert!(told.experimental.is_none());
        assert_eq!(one.only().map(|session| session.session()), Some(7));
        one.disconnect(7);
        assert!(one.only().is_none());

        // A client that declares on each request (MCP 2026-07-28): servers are told every
        // capability at once, as over HTTP, and each request is checked against its own.
        let per_request = Clients::new(ClientSessions::One);
        per_request.connect(Arc::new(Nobody), None);
        assert_eq!(per_request.capabilities(), every_capability());
        // Its server/discover already starts them, before any session connects.
        let discovered = Clients::new(ClientSessions::One);
        discovered.expect_per_request();
        assert_eq!(discovered.capabilities(), every_capability());
        assert!(discovered.only().is_none());
    }

    /// rmcp reads an elicitation's schema into types of its own and writes it again for the
    /// client: nothing a server wrote may be lost on the way (titles of choices, defaults,
    /// formats, the legacy `enumNames`).
    #[test]
    fn an_elicitations_schema_passes_through_whole() {
        let asked = serde_json::json!({
            "mode": "form",
            "message": "Please provide inputs",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": { "type": "string", "title": "Name", "description": "Your name", "default": "Ada" },
                    "email": { "type": "string", "format": "email" },
                    "amount": { "type": "number", "minimum": 0.5, "maximum": 99.5, "default": 3.25 },
                    "hero": { "type": "string", "oneOf": [{ "const": "h1", "title": "Superman" }], "default": "h1" },
                    "fish": { "type": "array", "minItems": 1, "items": { "anyOf": [{ "const": "f1", "title": "Tuna" }] } },
                    "pet": { "type": "string", "enum": ["p1", "p2"], "enumNames": ["Cats", "Dogs"] },
                    "agree": { "type": "boolean" }
                },
                "required": ["name"]
            }
        });
        let params: ElicitRequestParams = serde_json::from_value(asked.clone()).unwrap();
        assert_eq!(serde_json::to_value(&params).unwrap(), asked);
    }
}
