//! What crosses one connection to an upstream server, seen by toolweave on both sides of rmcp.
//!
//! Each transport (stdio, streamable HTTP, SSE) tells its connection's [`Wire`] about every
//! message it sends ([`Wire::sending`], [`Wire::written`]) and hands it the bytes of every message
//! it receives ([`Wire::receive`]) before rmcp sees them. The wire therefore knows which requests
//! are waiting for an answer, with the JSON type of their ids, and when each one went out. With
//! that it:
//!
//! - matches answers to requests by the exact JSON type and value of their ids: rmcp also takes
//!   the string `"7"` as the answer to request `7` (`NumberOrString::matches_response_id` and
//!   `service::remove_pending_request` in rmcp 3.11), which hands one call the answer to
//!   something else. Such an answer is reported and dropped here;
//! - fails the request an unreadable answer was meant for at once: rmcp gets a JSON-RPC error
//!   for it, and the caller finds what was wrong with [`Wire::take_unreadable`];
//! - logs, with the server's name, what cannot be tied to a request, and keeps a count and the
//!   first one for a start that fails ([`Wire::untied`]);
//! - hands rmcp a request of the server's that cannot be read as a request named
//!   [`UNREADABLE_REQUEST`], with its own id and what was wrong, so the client handler answers
//!   the server with an error that says so instead of leaving it waiting;
//! - tells a call that timed out where its time went ([`Wire::delivery`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, CustomRequest, ErrorCode, ErrorData, RequestId,
    ServerJsonRpcMessage, ServerRequest,
};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::decode::{Decoded, Method, decode};
use crate::error::{Delivery, Malformed};

/// The method under which rmcp is handed a request of the server's that cannot be read; its
/// params hold the request's `method` and the `fault`.
pub(crate) const UNREADABLE_REQUEST: &str = "toolweave/unreadable-request";

/// How many abandoned requests are remembered, so that a late answer to one is dropped quietly.
const ABANDONED_KEPT: usize = 256;
/// How many unreadable answers wait for their callers at most; past it, a caller reads the
/// JSON-RPC error rmcp got, which says the same in fewer words.
const UNREADABLE_KEPT: usize = 256;

/// One connection's view of the messages that cross it. Shared by the transport (which feeds it)
/// and the manager (which asks it about calls).
#[derive(Debug)]
pub(crate) struct Wire {
    server: String,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Requests sent and not answered.
    pending: HashMap<RequestId, Request>,
    /// Requests given up on (cancelled), newest last: an answer to one is not news, and the
    /// caller that gave up may still ask where its time went.
    abandoned: VecDeque<(RequestId, Request)>,
    /// Answers that could not be read, by the id of the request they answered, until the caller
    /// takes them.
    unreadable: HashMap<RequestId, (Method, Malformed)>,
    /// Messages that could not be tied to a request: how many, and the first.
    untied: usize,
    first_untied: Option<Malformed>,
}

impl State {
    fn is_abandoned(&self, id: &RequestId) -> bool {
        self.abandoned.iter().any(|(abandoned, _)| abandoned == id)
    }
}

/// A request on its way.
#[derive(Debug)]
struct Request {
    method: Method,
    /// When the transport was handed it.
    handed: Instant,
    /// When it was written to the server.
    written: Option<Instant>,
}

/// A message read from the server, for rmcp.
#[derive(Debug)]
pub(crate) struct Received {
    /// The message.
    pub(crate) message: ServerJsonRpcMessage,
    /// Whether it is not what the server sent byte for byte (tools left out, or an error standing
    /// for an unreadable answer): a transport that hands rmcp text must write it anew.
    pub(crate) rewritten: bool,
}

impl Wire {
    /// The wire of a new connection to `server`.
    pub(crate) fn new(server: impl Into<String>) -> Arc<Self> {
        Arc::new(Self {
            server: server.into(),
            state: Mutex::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The maps stay whole whatever panicked while the lock was held.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The transport is about to send `message`: a request starts waiting for its answer; a
    /// cancellation ends the wait of the request it names.
    pub(crate) fn sending(&self, message: &ClientJsonRpcMessage) {
        let mut state = self.lock();
        match message {
            ClientJsonRpcMessage::Request(request) => {
                state.pending.insert(
                    request.id.clone(),
                    Request {
                        method: Method::of(request.request.method()),
                        handed: Instant::now(),
                        written: None,
                    },
                );
            }
            ClientJsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                    && let Some(abandoned) = state.pending.remove_entry(id)
                {
                    if state.abandoned.len() == ABANDONED_KEPT {
                        state.abandoned.pop_front();
                    }
                    state.abandoned.push_back(abandoned);
                }
            }
            ClientJsonRpcMessage::Response(_) | ClientJsonRpcMessage::Error(_) => {}
        }
    }

    /// `message` was written to the server (for HTTP: its request is on its way).
    pub(crate) fn written(&self, message: &ClientJsonRpcMessage) {
        if let ClientJsonRpcMessage::Request(request) = message
            && let Some(pending) = self.lock().pending.get_mut(&request.id)
        {
            pending.written = Some(Instant::now());
        }
    }

    /// `message` is sent in one step (HTTP): [`sending`](Self::sending) and
    /// [`written`](Self::written) at once.
    pub(crate) fn sent(&self, message: &ClientJsonRpcMessage) {
        self.sending(message);
        self.written(message);
    }

    /// Reads one message the server sent. `None` when there is nothing for rmcp: it could not be
    /// read and answers no request of toolweave's (logged), or it answers one given up on.
    pub(crate) fn receive(&self, bytes: &[u8]) -> Option<Received> {
        self.read(bytes, None)
    }

    /// Reads a message that can only be the answer to request `id` (an HTTP body answering the
    /// `POST` of that request): whatever is wrong with it, that request fails with it.
    pub(crate) fn receive_answer(&self, bytes: &[u8], id: &RequestId) -> Option<Received> {
        self.read(bytes, Some(id))
    }

    /// Fails request `id` with `malformed`, what was wrong with its answer. `None` when nothing
    /// waits for it any more.
    pub(crate) fn fail(&self, id: &RequestId, malformed: Malformed) -> Option<Received> {
        let mut state = self.lock();
        let (id, request) = state.pending.remove_entry(id)?;
        Some(self.unreadable(&mut state, id, request.method, malformed))
    }

    /// Reads one message; `answering` is the request it can only answer, when the framing says.
    fn read(&self, bytes: &[u8], answering: Option<&RequestId>) -> Option<Received> {
        // Not locked while decoding, which may take a while (a long line is decoded on a thread
        // of its own): what is found is checked against the pending requests again below.
        let decoded = decode(bytes, |id| {
            self.lock().pending.get(id).map(|request| request.method)
        });
        let mut state = self.lock();
        match decoded {
            Decoded::Message {
                message,
                rewritten,
                dropped,
            } => {
                for tool in &dropped {
                    match &tool.name {
                        Some(name) => {
                            tracing::warn!(server = %self.server, tool = %name, "left the tool {name:?} out of the server's tool list: {}", tool.fault)
                        }
                        None => {
                            tracing::warn!(server = %self.server, "left a tool without a name out of the server's tool list: {}", tool.fault)
                        }
                    }
                }
                self.answered(&mut state, message, rewritten, answering)
            }
            Decoded::UnreadableRequest {
                id,
                method,
                malformed,
            } => {
                tracing::warn!(server = %self.server, %id, "the server's {method} request cannot be read, and it is answered with an error: {malformed}");
                let params =
                    serde_json::json!({ "method": method, "fault": malformed.to_string() });
                let request = CustomRequest::new(UNREADABLE_REQUEST, Some(params));
                Some(Received {
                    message: ServerJsonRpcMessage::request(
                        ServerRequest::CustomRequest(request),
                        id,
                    ),
                    rewritten: true,
                })
            }
            Decoded::Malformed { id, malformed } => {
                let id = answering.cloned().or(id);
                if let Some(id) = &id
                    && state.is_abandoned(id)
                {
                    tracing::debug!(server = %self.server, %id, "an unreadable answer to a call given up on: {malformed}");
                    return None;
                }
                match id.and_then(|id| state.pending.remove_entry(&id)) {
                    Some((id, request)) => {
                        Some(self.unreadable(&mut state, id, request.method, malformed))
                    }
                    None => {
                        self.untie(&mut state, malformed);
                        None
                    }
                }
            }
        }
    }

    /// A message that was read: an answer must answer a request waiting for it, with an id of the
    /// same JSON type.
    fn answered(
        &self,
        state: &mut State,
        message: ServerJsonRpcMessage,
        rewritten: bool,
        answering: Option<&RequestId>,
    ) -> Option<Received> {
        let id = match &message {
            ServerJsonRpcMessage::Response(response) => &response.id,
            ServerJsonRpcMessage::Error(error) => match &error.id {
                Some(id) => id,
                None => {
                    tracing::warn!(server = %self.server, code = error.error.code.0, "the server sent an error about no request: {}", error.error.message);
                    return Some(Received { message, rewritten });
                }
            },
            ServerJsonRpcMessage::Request(_) | ServerJsonRpcMessage::Notification(_) => {
                return Some(Received { message, rewritten });
            }
        };
        if state.pending.remove(id).is_some() {
            return Some(Received { message, rewritten });
        }
        if state.is_abandoned(id) {
            tracing::debug!(server = %self.server, %id, "an answer to a call given up on");
            return None;
        }
        let answer = id_text(id);
        let malformed = match other_type(id).and_then(|other| state.pending.get_key_value(&other)) {
            Some((sent, _)) => Malformed::IdOfAnotherType {
                id: answer,
                sent: id_text(sent),
            },
            None => Malformed::UnknownId { id: answer },
        };
        // An answer framed as the answer to a request, with another id, fails that request.
        if let Some((id, request)) = answering.and_then(|id| state.pending.remove_entry(id)) {
            return Some(self.unreadable(state, id, request.method, malformed));
        }
        self.untie(state, malformed);
        None
    }

    /// An answer to request `id` that could not be read: kept for the caller, and a JSON-RPC error
    /// for rmcp, so the call ends at once.
    fn unreadable(
        &self,
        state: &mut State,
        id: RequestId,
        method: Method,
        malformed: Malformed,
    ) -> Received {
        tracing::warn!(server = %self.server, %id, "the server's answer to {} cannot be read: {malformed}", method.name());
        let error = ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            format!("toolweave could not read the server's answer: {malformed}"),
            None,
        );
        if state.unreadable.len() < UNREADABLE_KEPT {
            state.unreadable.insert(id.clone(), (method, malformed));
        }
        Received {
            message: ServerJsonRpcMessage::error(error, Some(id)),
            rewritten: true,
        }
    }

    /// A message that answers no request toolweave waits for.
    fn untie(&self, state: &mut State, malformed: Malformed) {
        tracing::warn!(server = %self.server, "the server sent a message toolweave cannot use, and it was dropped: {malformed}");
        state.untied += 1;
        state.first_untied.get_or_insert(malformed);
    }

    /// What was wrong with the answer to request `id`, when it could not be read (once).
    pub(crate) fn take_unreadable(&self, id: &RequestId) -> Option<Malformed> {
        self.lock()
            .unreadable
            .remove(id)
            .map(|(_, malformed)| malformed)
    }

    /// What was wrong with an unreadable answer to a request for `method` (the handshake's, whose
    /// ids rmcp does not show), once.
    pub(crate) fn take_unreadable_answer_to(&self, method: Method) -> Option<Malformed> {
        let mut state = self.lock();
        let id = state
            .unreadable
            .iter()
            .find(|(_, (answered, _))| *answered == method)
            .map(|(id, _)| id.clone())?;
        state.unreadable.remove(&id).map(|(_, malformed)| malformed)
    }

    /// How many messages could not be tied to a request, and what was wrong with the first.
    pub(crate) fn untied(&self) -> Option<(usize, Malformed)> {
        let state = self.lock();
        state
            .first_untied
            .clone()
            .map(|first| (state.untied, first))
    }

    /// How far request `id` got by `now`, for a call toolweave took at `taken` (no earlier than
    /// the connection was ready).
    pub(crate) fn delivery(
        &self,
        id: Option<&RequestId>,
        taken: Instant,
        now: Instant,
    ) -> Delivery {
        let state = self.lock();
        // The caller's cancellation may have gone out already (on another thread).
        let request = id.and_then(|id| {
            state.pending.get(id).or_else(|| {
                state
                    .abandoned
                    .iter()
                    .find(|(abandoned, _)| abandoned == id)
                    .map(|(_, request)| request)
            })
        });
        let Some(request) = request else {
            return Delivery::Queued {
                waited: now.saturating_duration_since(taken),
            };
        };
        match request.written {
            Some(written) => Delivery::Sent {
                waited: written.saturating_duration_since(taken),
                upstream: now.saturating_duration_since(written),
            },
            None => Delivery::Unwritten {
                waited: request.handed.saturating_duration_since(taken),
                blocked: now.saturating_duration_since(request.handed),
            },
        }
    }
}

/// An id as JSON: `7`, `"7"`.
fn id_text(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_else(|_| id.to_string())
}

/// The same id with the other JSON type, when there is one: `"7"` for `7`, `7` for `"7"`.
fn other_type(id: &RequestId) -> Option<RequestId> {
    match id {
        RequestId::Number(number) => Some(RequestId::String(number.to_string().into())),
        RequestId::String(text) => text.parse::<i64>().ok().map(RequestId::Number),
    }
}

/// A message longer than this is read on a blocking thread: reading tens of megabytes of JSON
/// takes tens of milliseconds, and the gateway's runtime has one thread for every connection.
const READ_ELSEWHERE_BYTES: usize = 1 << 20;

/// Reads a transport's messages, the long ones on a blocking thread. Cancel-safe: a read
/// dropped while its message was being read elsewhere hands that message to the next read.
#[derive(Default)]
pub(crate) struct Reader {
    elsewhere: Option<JoinHandle<Option<ServerJsonRpcMessage>>>,
}

impl Reader {
    /// The message of a read dropped before it ended, if it had one.
    pub(crate) async fn unfinished(&mut self) -> Option<ServerJsonRpcMessage> {
        let reading = self.elsewhere.as_mut()?;
        let received = reading.await;
        self.elsewhere = None;
        received.unwrap_or_else(|error| {
            tracing::warn!(%error, "reading a message of the server failed");
            None
        })
    }

    /// Reads `bytes` with `read` (which hands them to `wire`). Long ones are read elsewhere and
    /// taken (their memory is freed there); short ones are left to the caller to reuse.
    pub(crate) async fn read(
        &mut self,
        wire: &Arc<Wire>,
        bytes: &mut Vec<u8>,
        read: fn(&Wire, &[u8]) -> Option<ServerJsonRpcMessage>,
    ) -> Option<ServerJsonRpcMessage> {
        if bytes.len() <= READ_ELSEWHERE_BYTES {
            return read(wire, bytes);
        }
        let (wire, bytes) = (wire.clone(), std::mem::take(bytes));
        self.elsewhere = Some(tokio::task::spawn_blocking(move || read(&wire, &bytes)));
        self.unfinished().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{
        CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
        ClientRequest, ServerResult,
    };
    use serde_json::json;

    fn call(id: i64) -> ClientJsonRpcMessage {
        ClientJsonRpcMessage::request(
            ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new(
                "tool",
            ))),
            RequestId::Number(id),
        )
    }

    fn answer(id: serde_json::Value, text: &str) -> Vec<u8> {
        json!({ "jsonrpc": "2.0", "id": id, "result": { "content": [{ "type": "text", "text": text }] } })
            .to_string()
            .into_bytes()
    }

    #[test]
    fn answers_match_requests_by_type_and_value() {
        let wire = Wire::new("test");
        wire.sent(&call(7));
        // The string "7" answers nothing toolweave sent: dropped and counted.
        assert!(wire.receive(&answer(json!("7"), "wrong")).is_none());
        // So does an id never sent.
        assert!(wire.receive(&answer(json!(8), "wrong")).is_none());
        let (count, first) = wire.untied().unwrap();
        assert_eq!(count, 2);
        assert_eq!(
            first.to_string(),
            "an answer whose id is \"7\", where toolweave's request had the id 7 (ids match only \
             in type and value, so it answers no request of toolweave's)"
        );
        // The number 7 answers it, once.
        let received = wire.receive(&answer(json!(7), "right")).unwrap();
        assert!(!received.rewritten);
        let ServerJsonRpcMessage::Response(response) = received.message else {
            panic!("not an answer");
        };
        assert!(matches!(response.result, ServerResult::CallToolResult(_)));
        assert!(wire.receive(&answer(json!(7), "again")).is_none());
        assert_eq!(wire.untied().unwrap().0, 3);
    }

    #[test]
    fn an_unreadable_answer_fails_its_request_and_says_why() {
        let wire = Wire::new("test");
        wire.sent(&call(3));
        let received = wire
            .receive(br#"{"jsonrpc":"2.0","id":3,"error":{"code":1}}"#)
            .unwrap();
        assert!(received.rewritten);
        let ServerJsonRpcMessage::Error(error) = received.message else {
            panic!("not an error");
        };
        assert_eq!(error.id, Some(RequestId::Number(3)));
        assert_eq!(
            error.error.message,
            "toolweave could not read the server's answer: a JSON-RPC error without a message"
        );
        assert_eq!(
            wire.take_unreadable(&RequestId::Number(3)),
            Some(Malformed::ErrorWithoutMessage)
        );
        assert_eq!(wire.take_unreadable(&RequestId::Number(3)), None);
        assert!(wire.untied().is_none());
    }

    #[test]
    fn a_late_answer_to_a_cancelled_request_is_dropped_quietly() {
        let wire = Wire::new("test");
        wire.sent(&call(4));
        let cancel = ClientJsonRpcMessage::notification(ClientNotification::CancelledNotification(
            CancelledNotification::new(CancelledNotificationParam::new(
                Some(RequestId::Number(4)),
                None,
            )),
        ));
        wire.sent(&cancel);
        assert!(wire.receive(&answer(json!(4), "late")).is_none());
        assert!(
            wire.receive(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":")
                .is_none()
        );
        assert!(wire.untied().is_none());
    }

    #[test]
    fn delivery_says_where_the_time_went() {
        let wire = Wire::new("test");
        let taken = Instant::now();
        let later = taken + std::time::Duration::from_millis(50);
        assert!(matches!(
            wire.delivery(Some(&RequestId::Number(1)), taken, later),
            Delivery::Queued { waited } if waited.as_millis() == 50
        ));
        wire.sending(&call(1));
        assert!(matches!(
            wire.delivery(Some(&RequestId::Number(1)), taken, later),
            Delivery::Unwritten { .. }
        ));
        wire.written(&call(1));
        let cancel = ClientJsonRpcMessage::notification(ClientNotification::CancelledNotification(
            CancelledNotification::new(CancelledNotificationParam::new(
                Some(RequestId::Number(1)),
                None,
            )),
        ));
        // Asked after the cancellation went out, it still knows.
        wire.sent(&cancel);
        assert!(matches!(
            wire.delivery(Some(&RequestId::Number(1)), taken, later + std::time::Duration::from_millis(10)),
            Delivery::Sent { upstream, .. } if upstream.as_millis() >= 10
        ));
    }
}
