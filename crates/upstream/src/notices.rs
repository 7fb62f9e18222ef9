//! Progress and log notifications an upstream server sends while it works on a call, routed to
//! whoever made the call; and the client session its requests go to (`requests.rs`).
//!
//! Progress is exact: each call that has a listener carries a progress token of its own, and a
//! notification with that token belongs to that call. Log messages (`notifications/message`)
//! name no request, so a server's message goes to the one listener with calls in flight to that
//! server; when several listeners have calls there at once, the message cannot be told apart and
//! stays in toolweave's own log, so one client never reads what another's call caused. Requests
//! (elicitation, sampling, roots) name no call either: they go to the one client session with
//! calls in flight to the server, whichever of its executions made them.

// MCP logging is deprecated by SEP-2577 for the newest protocol version; servers speaking
// 2025-06-18 and 2025-11-25 still send it.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::model::{LoggingLevel, ProgressToken};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::requests::{ClientSession, Refusal, Route};

/// How many notices wait for the receiver before more are dropped (and counted in the log).
const NOTICE_BUFFER: usize = 256;

/// Something an upstream server said about a call in flight, or the execution's own code said
/// while it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// `notifications/progress` for the call.
    Progress {
        /// The server's name.
        server: String,
        /// The tool called.
        tool: String,
        /// Progress as the server counts it.
        progress: f64,
        /// The total, when the server knows it.
        total: Option<f64>,
        /// The server's message.
        message: Option<String>,
    },
    /// `notifications/message` sent while the call was in flight.
    Log {
        /// The server's name.
        server: String,
        /// Its severity.
        level: LoggingLevel,
        /// The server's logger name, if it gave one.
        logger: Option<String>,
        /// What it logged.
        data: Value,
    },
    /// `progress(done, total?, message?)` of the execution's code.
    CodeProgress {
        /// Work done, as the code counts it.
        progress: f64,
        /// All the work, when the code knows it.
        total: Option<f64>,
        /// What it is doing.
        message: Option<String>,
    },
    /// A console line of the execution's code (`console.warn`, `print`).
    CodeLog {
        /// Its severity: debug, info (`log` and `info`), warning or error.
        level: LoggingLevel,
        /// The line.
        text: String,
    },
}

/// Where the notices of one caller's calls go, and the client session that upstream servers'
/// requests about them go to. Cheap to clone; every clone is the same listener.
#[derive(Debug, Clone)]
pub struct Listener {
    id: u64,
    sender: mpsc::Sender<Notice>,
    /// The client session requests go to; none for a caller that is no MCP client.
    client: Option<Arc<dyn ClientSession>>,
    /// The caller's W3C trace context, passed on to upstream requests when toolweave's own
    /// spans are not exported.
    trace: Option<TraceContext>,
}

/// W3C trace context (`traceparent`, and `tracestate` when there is one), as MCP carries it in
/// `_meta`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// `00-<trace id>-<parent span id>-<flags>`.
    pub traceparent: String,
    /// Vendors' entries, as given.
    pub tracestate: Option<String>,
}

impl Listener {
    /// A listener and the receiving end of its notices.
    pub fn new() -> (Self, mpsc::Receiver<Notice>) {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let (sender, receiver) = mpsc::channel(NOTICE_BUFFER);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let listener = Self {
            id,
            sender,
            client: None,
            trace: None,
        };
        (listener, receiver)
    }

    /// The same listener, whose calls' servers may send their requests to `client`.
    pub fn with_client(self, client: Arc<dyn ClientSession>) -> Self {
        Self {
            client: Some(client),
            ..self
        }
    }

    /// The same listener, whose calls belong to the caller's trace `trace`.
    pub fn with_trace(self, trace: Option<TraceContext>) -> Self {
        Self { trace, ..self }
    }

    /// The caller's trace context, when it sent one.
    pub fn trace(&self) -> Option<&TraceContext> {
        self.trace.as_ref()
    }

    /// The client session requests go to, when there is one.
    pub fn client(&self) -> Option<&Arc<dyn ClientSession>> {
        self.client.as_ref()
    }

    /// Hands `notice` to the listener's receiver, as an upstream server's notice would be: how a
    /// tool provider that is no MCP server reports progress. Dropped (and logged) when the
    /// receiver is behind.
    pub fn notify(&self, notice: Notice) {
        self.send(notice);
    }

    fn send(&self, notice: Notice) {
        if let Err(mpsc::error::TrySendError::Full(notice)) = self.sender.try_send(notice) {
            tracing::debug!(?notice, "a notice was dropped: its receiver is behind");
        }
    }
}

/// The routes of one server's notices: progress tokens to calls, and the listeners with calls
/// in flight.
#[derive(Debug, Default)]
pub(crate) struct Routes {
    inner: Mutex<RoutesInner>,
}

#[derive(Debug, Default)]
struct RoutesInner {
    /// Progress token (the one the MCP client sent the call with) → the call's listener and tool.
    progress: HashMap<ProgressToken, (Listener, String)>,
    /// Listener id → (listener, calls in flight).
    active: HashMap<u64, (Listener, usize)>,
    /// Client session → its calls in flight, and what ends the requests made for them.
    sessions: HashMap<u64, SessionCalls>,
}

/// One client session's calls in flight to the server.
#[derive(Debug)]
struct SessionCalls {
    calls: usize,
    /// Cancelled when the last of them ends: requests made for them end too.
    ended: CancellationToken,
}

/// One call's place in the routes; leaving them when dropped (answered, failed, timed out or
/// cancelled alike).
#[derive(Debug)]
pub(crate) struct Registration {
    routes: Arc<Routes>,
    token: ProgressToken,
    listener: u64,
    /// The client session the call came from, when it came from one.
    session: Option<u64>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut inner = self.routes.lock();
        inner.progress.remove(&self.token);
        if let Some((_, calls)) = inner.active.get_mut(&self.listener) {
            *calls -= 1;
            if *calls == 0 {
                inner.active.remove(&self.listener);
            }
        }
        if let Some(session) = self.session
            && let Some(entry) = inner.sessions.get_mut(&session)
        {
            entry.calls -= 1;
            if entry.calls == 0 {
                entry.ended.cancel();
                inner.sessions.remove(&session);
            }
        }
    }
}

impl Routes {
    fn lock(&self) -> MutexGuard<'_, RoutesInner> {
        // The maps stay whole whatever panicked while the lock was held.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a call to `tool` made for `listener`, sent with progress token `token`.
    pub(crate) fn register(
        self: &Arc<Self>,
        listener: &Listener,
        tool: &str,
        token: ProgressToken,
    ) -> Registration {
        let mut inner = self.lock();
        inner
            .progress
            .insert(token.clone(), (listener.clone(), tool.to_owned()));
        inner
            .active
            .entry(listener.id)
            .or_insert_with(|| (listener.clone(), 0))
            .1 += 1;
        let session = listener.client.as_ref().map(|client| {
            let session = client.session();
            inner
                .sessions
                .entry(session)
                .or_insert_with(|| SessionCalls {
                    calls: 0,
                    ended: CancellationToken::new(),
                })
                .calls += 1;
            session
        });
        Registration {
            routes: self.clone(),
            token,
            listener: listener.id,
            session,
        }
    }

    /// Where a request from the server goes: the one client session with calls in flight to
    /// it, as one of its executions with calls in flight gives it (so the request is sent in the
    /// name of a request still open, and recorded with an execution still running), until the
    /// last of those calls ends.
    pub(crate) fn route(&self) -> Result<Route, Refusal> {
        let inner = self.lock();
        let mut sessions = inner.sessions.iter();
        let (session, calls) = match (sessions.next(), sessions.next()) {
            (Some(only), None) => only,
            (Some(_), Some(_)) => return Err(Refusal::SeveralSessions),
            (None, _) if inner.active.is_empty() => return Err(Refusal::NoCall),
            (None, _) => return Err(Refusal::NoClient),
        };
        let client = inner
            .active
            .values()
            .filter_map(|(listener, _)| listener.client.as_ref())
            .find(|client| client.session() == *session)
            .cloned();
        // A session counts calls only while a listener of it has some: there is one.
        let client = client.ok_or(Refusal::NoCall)?;
        Ok(Route {
            client,
            cancel: calls.ended.clone(),
            limit: None,
        })
    }

    /// Routes a progress notification to its call, if it is still in flight.
    pub(crate) fn progress(
        &self,
        server: &str,
        token: &ProgressToken,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) {
        let route = self.lock().progress.get(token).cloned();
        if let Some((listener, tool)) = route {
            listener.send(Notice::Progress {
                server: server.to_owned(),
                tool,
                progress,
                total,
                message,
            });
        }
    }

    /// Routes a log message to the one listener with calls in flight, if there is exactly one.
    /// Whether it was routed.
    pub(crate) fn log(
        &self,
        server: &str,
        level: LoggingLevel,
        logger: Option<String>,
        data: Value,
    ) -> bool {
        let listener = {
            let inner = self.lock();
            let mut active = inner.active.values();
            match (active.next(), active.next()) {
                (Some((listener, _)), None) => listener.clone(),
                _ => return false,
            }
        };
        listener.send(Notice::Log {
            server: server.to_owned(),
            level,
            logger,
            data,
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn progress_goes_to_its_call_and_logs_to_a_lone_listener() {
        let routes = Arc::new(Routes::default());
        let (first, mut first_notices) = Listener::new();
        let (second, mut second_notices) = Listener::new();

        let token = |n: i64| ProgressToken(rmcp::model::NumberOrString::Number(n));
        let call = routes.register(&first, "slow", token(1));
        routes.progress("s", &token(1), 1.0, Some(2.0), None);
        let Some(Notice::Progress { tool, progress, .. }) = first_notices.recv().await else {
            panic!("no progress notice");
        };
        assert_eq!((tool.as_str(), progress), ("slow", 1.0));
        assert!(routes.log("s", LoggingLevel::Info, None, Value::from("one caller")));
        assert!(matches!(
            first_notices.recv().await,
            Some(Notice::Log { .. })
        ));

        // With two listeners' calls in flight, a log line belongs to neither.
        let other = routes.register(&second, "add", token(2));
        assert!(!routes.log("s", LoggingLevel::Info, None, Value::from("whose?")));
        drop(call);
        assert!(routes.log("s", LoggingLevel::Info, None, Value::from("second's")));
        assert!(matches!(
            second_notices.recv().await,
            Some(Notice::Log { .. })
        ));
        assert!(first_notices.try_recv().is_err());

        // A call that has ended gets nothing more.
        drop(other);
        routes.progress("s", &token(2), 1.0, None, None);
        assert!(!routes.log("s", LoggingLevel::Info, None, Value::Null));
        assert!(second_notices.try_recv().is_err());
    }

    /// A client session that is never asked here; only its number matters.
    #[derive(Debug)]
    struct Session(u64);

    impl ClientSession for Session {
        fn session(&self) -> u64 {
            self.0
        }

        fn ask(
            &self,
            _server: &str,
            _request: crate::ForwardedRequest,
            _cancel: CancellationToken,
        ) -> futures::future::BoxFuture<'static, Result<crate::ForwardedAnswer, Refusal>> {
            Box::pin(async { Err(Refusal::NoCall) })
        }
    }

    #[test]
    fn requests_go_to_the_one_session_with_calls_in_flight_until_they_end() {
        let routes = Arc::new(Routes::default());
        let token = |n: i64| ProgressToken(rmcp::model::NumberOrString::Number(n));
        let route = |routes: &Routes| {
            routes
                .route()
                .map(|route| (route.client.session(), route.cancel))
        };
        assert_eq!(route(&routes).err(), Some(Refusal::NoCall));

        // A caller that is no client (toolweave run) cannot be asked.
        let (run, _) = Listener::new();
        let from_run = routes.register(&run, "add", token(1));
        assert_eq!(route(&routes).err(), Some(Refusal::NoClient));
        drop(from_run);

        // Two executions of one session: one route, which ends with the last of their calls.
        let (first, _) = Listener::new();
        let (second, _) = Listener::new();
        let second_client: Arc<dyn ClientSession> = Arc::new(Session(7));
        let first = first.with_client(Arc::new(Session(7)));
        let second = second.with_client(second_client.clone());
        let one = routes.register(&first, "ask", token(2));
        let two = routes.register(&second, "slow", token(3));
        let (session, ended) = route(&routes).unwrap();
        assert_eq!(session, 7);
        drop(one);
        assert!(!ended.is_cancelled());
        // Asked through the execution that still has calls in flight.
        assert!(Arc::ptr_eq(&routes.route().unwrap().client, &second_client));
        // Another session's call too: whose request it is cannot be told.
        let (other, _) = Listener::new();
        let other = other.with_client(Arc::new(Session(8)));
        let three = routes.register(&other, "ask", token(4));
        assert_eq!(route(&routes).err(), Some(Refusal::SeveralSessions));
        drop(two);
        assert!(ended.is_cancelled());
        assert_eq!(route(&routes).unwrap().0, 8);
        drop(three);
        assert_eq!(route(&routes).err(), Some(Refusal::NoCall));
    }
}
