//! State without a protocol session, through a handle.
//!
//! Over HTTP without an MCP session (a client speaking MCP 2026-07-28, which has none, or
//! `--stateless`), no request belongs to a session, so nothing would outlive one execution.
//! Instead the answer of `execute_code` carries a session handle, sealed ([`crate::sealed`]) and
//! bound to the identity that made the call, and the model passes it back as `"session"`: the
//! execution then has that session's store, result handles and approvals "for the rest of this
//! session", as one in a protocol session has.
//!
//! Sessions are kept by a [`SessionKeeper`]: in this process's memory ([`MemoryKeeper`]), or,
//! with `--state`, in Redis or Valkey ([`SharedKeeper`]), where every copy given the same
//! `--state` finds them: a handle minted by one copy opens on any other. A session is kept once
//! it holds something or a handle named it, and forgotten when unused for `--session-ttl-ms`;
//! every answer carries a fresh handle, valid as long, so a session in use never expires.
//!
//! A shared session is read at the start of each execution and what the execution changed (the
//! store keys it set or deleted, the handles it made) is written back with its answer, so
//! executions of one session on several copies at once do not undo each other's keys (the last
//! write of one key wins). Approvals "for the rest of this session" stay with the copy that
//! was given them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;
use toolweave_config::Limits;
use toolweave_core::{SessionHandleError, SessionState};

use crate::approve::SessionApprovals;
use crate::sealed::{HandleUnsealed, Seals, SessionRef};
use crate::shared::{SessionHandlesThere, SharedState};

/// A session is kept this much longer than its newest handle is valid: a handle that opens
/// always finds what its session kept.
const KEPT_BEYOND_HANDLE: Duration = Duration::from_secs(60);

/// How often the memory keeper looks for sessions to forget.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// A session named by handles: what its executions keep and what its person approved.
pub(crate) struct HandleSession {
    /// Its id (random), which its handles name.
    id: String,
    /// The identity that made it (empty for none): only its handles open it.
    owner: String,
    /// How long it is kept unused (`--session-ttl-ms`).
    ttl: Duration,
    /// The store and result handles.
    pub(crate) state: Arc<SessionState>,
    /// What was approved for the rest of the session.
    pub(crate) approvals: Arc<SessionApprovals>,
    /// Whether a handle named it (it is kept whatever it holds).
    named: bool,
}

impl std::fmt::Debug for HandleSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandleSession")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl HandleSession {
    fn new(id: String, owner: &str, limits: &Limits, named: bool) -> Self {
        Self {
            id,
            owner: owner.to_owned(),
            ttl: limits.session_ttl,
            state: SessionState::new(limits),
            approvals: Arc::default(),
            named,
        }
    }

    /// How the audit log names it.
    pub(crate) fn name(&self) -> String {
        format!("handle:{}", self.id)
    }

    /// Whether it holds nothing a later execution could miss.
    fn is_empty(&self) -> bool {
        self.state.is_empty() && self.approvals.is_empty()
    }
}

/// Where sessions named by handles are kept.
pub(crate) trait SessionKeeper: Send + Sync {
    /// A new, empty session `id` of `owner`, not yet kept.
    fn fresh(&self, id: String, owner: &str, limits: &Limits) -> HandleSession {
        HandleSession::new(id, owner, limits, false)
    }

    /// The session kept under `id` for `owner`; a new, empty one kept under `id` when there is
    /// none. `Err` when `id` is kept for another owner.
    fn find<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        limits: &'a Limits,
    ) -> BoxFuture<'a, Result<Arc<HandleSession>, SessionHandleError>>;

    /// Keeps `session` for another `--session-ttl-ms` (and [`KEPT_BEYOND_HANDLE`]) from now.
    fn keep(&self, session: Arc<HandleSession>) -> BoxFuture<'_, Result<(), SessionHandleError>>;
}

/// Sessions kept in this process's memory.
#[derive(Default)]
pub(crate) struct MemoryKeeper {
    kept: Mutex<MemoryKept>,
}

#[derive(Default)]
struct MemoryKept {
    /// Each session, and when it is forgotten.
    sessions: HashMap<String, (Arc<HandleSession>, Instant)>,
    /// When sessions past their time were last forgotten.
    swept: Option<Instant>,
}

impl MemoryKept {
    /// Forgets the sessions past their time, at most every [`SWEEP_EVERY`].
    fn sweep(&mut self, now: Instant) {
        if self.swept.is_some_and(|swept| now < swept + SWEEP_EVERY) {
            return;
        }
        self.swept = Some(now);
        self.sessions.retain(|_, (_, until)| *until > now);
    }
}

impl MemoryKeeper {
    fn kept(&self) -> std::sync::MutexGuard<'_, MemoryKept> {
        // The map stays whole whatever panicked while the lock was held.
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many sessions are kept.
    #[cfg(test)]
    fn count(&self) -> usize {
        self.kept().sessions.len()
    }
}

impl SessionKeeper for MemoryKeeper {
    fn find<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        limits: &'a Limits,
    ) -> BoxFuture<'a, Result<Arc<HandleSession>, SessionHandleError>> {
        Box::pin(async move {
            let now = Instant::now();
            let mut kept = self.kept();
            kept.sweep(now);
            let until = now + limits.session_ttl + KEPT_BEYOND_HANDLE;
            let (session, kept_until) = kept.sessions.entry(id.to_owned()).or_insert_with(|| {
                let session = HandleSession::new(id.to_owned(), owner, limits, true);
                (Arc::new(session), until)
            });
            // The handle was sealed for its owner; the session was made by it too.
            if session.owner != owner {
                return Err(SessionHandleError::Forged);
            }
            *kept_until = until;
            Ok(session.clone())
        })
    }

    fn keep(&self, session: Arc<HandleSession>) -> BoxFuture<'_, Result<(), SessionHandleError>> {
        Box::pin(async move {
            let now = Instant::now();
            let mut kept = self.kept();
            kept.sweep(now);
            let until = now + session.ttl + KEPT_BEYOND_HANDLE;
            kept.sessions.insert(session.id.clone(), (session, until));
            Ok(())
        })
    }
}

/// Sessions kept in Redis or Valkey (`--state`), shared by every copy given the same.
pub(crate) struct SharedKeeper {
    pub(crate) shared: Arc<SharedState>,
}

impl SharedKeeper {
    fn session(&self, id: String, owner: &str, limits: &Limits, store: Store) -> HandleSession {
        let remote = Arc::new(SessionHandlesThere {
            shared: self.shared.clone(),
            session: id.clone(),
        });
        HandleSession {
            owner: owner.to_owned(),
            ttl: limits.session_ttl,
            state: SessionState::shared(limits, store, remote),
            approvals: Arc::default(),
            named: false,
            id,
        }
    }
}

/// A kept store: JSON texts by key.
type Store = std::collections::BTreeMap<String, String>;

impl SessionKeeper for SharedKeeper {
    fn fresh(&self, id: String, owner: &str, limits: &Limits) -> HandleSession {
        self.session(id, owner, limits, Store::new())
    }

    fn find<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        limits: &'a Limits,
    ) -> BoxFuture<'a, Result<Arc<HandleSession>, SessionHandleError>> {
        Box::pin(async move {
            let kept = self
                .shared
                .session(id)
                .await
                .map_err(|why| SessionHandleError::Unavailable { why })?;
            let store = match kept {
                // The handle was sealed for its owner; the session was made by it too.
                Some((kept_for, _)) if kept_for != owner => {
                    return Err(SessionHandleError::Forged);
                }
                Some((_, store)) => store,
                None => Store::new(),
            };
            let mut session = self.session(id.to_owned(), owner, limits, store);
            session.named = true;
            Ok(Arc::new(session))
        })
    }

    fn keep(&self, session: Arc<HandleSession>) -> BoxFuture<'_, Result<(), SessionHandleError>> {
        Box::pin(async move {
            let changes = session.state.take_changes();
            self.shared
                .keep_session(
                    &session.id,
                    &session.owner,
                    session.ttl + KEPT_BEYOND_HANDLE,
                    changes,
                )
                .await
                .map_err(|why| SessionHandleError::Unavailable {
                    why: format!("what this execution kept is not saved: {why}"),
                })
        })
    }
}

/// Session handles: opened from `"session"`, handed out with every answer.
pub(crate) struct SessionHandles {
    seals: Arc<Seals>,
    keeper: Arc<dyn SessionKeeper>,
}

impl std::fmt::Debug for SessionHandles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionHandles { .. }")
    }
}

impl SessionHandles {
    /// Handles sealed by `seals`, of sessions kept in this process's memory.
    pub(crate) fn in_memory(seals: Arc<Seals>) -> Self {
        Self {
            seals,
            keeper: Arc::new(MemoryKeeper::default()),
        }
    }

    /// Handles sealed by `seals` (the key copies share), of sessions kept in `shared`.
    pub(crate) fn shared(seals: Arc<Seals>, shared: Arc<SharedState>) -> Self {
        Self {
            seals,
            keeper: Arc::new(SharedKeeper { shared }),
        }
    }

    fn sealer(&self) -> Result<&crate::sealed::Sealer, SessionHandleError> {
        self.seals
            .get()
            .map_err(|why| SessionHandleError::Unavailable { why })
    }

    /// The session `handle` names for `caller` (the identity's name, empty for none), or, with
    /// no handle, a new one (kept once it holds something).
    pub(crate) async fn open(
        &self,
        handle: Option<&str>,
        caller: &str,
        limits: &Limits,
    ) -> Result<Arc<HandleSession>, SessionHandleError> {
        let Some(handle) = handle else {
            return Ok(Arc::new(self.keeper.fresh(
                crate::sealed::random_id(),
                caller,
                limits,
            )));
        };
        let sealer = self.sealer()?;
        let SessionRef { session } =
            sealer
                .open_session(handle, caller)
                .map_err(|why| match why {
                    HandleUnsealed::Expired => SessionHandleError::Expired {
                        ttl: limits.session_ttl,
                    },
                    HandleUnsealed::Forged => SessionHandleError::Forged,
                })?;
        self.keeper.find(&session, caller, limits).await
    }

    /// Keeps `session` (when it holds something or a handle named it) for another
    /// `--session-ttl-ms`; a fresh handle of it, valid as long.
    pub(crate) async fn hand_out(
        &self,
        session: &Arc<HandleSession>,
    ) -> Result<String, SessionHandleError> {
        let sealer = self.sealer()?;
        if session.named || !session.is_empty() {
            self.keeper.keep(session.clone()).await?;
        }
        let named = SessionRef {
            session: session.id.clone(),
        };
        sealer
            .seal_session(&named, &session.owner, session.ttl)
            .map_err(|why| SessionHandleError::Unavailable { why })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_handle_opens_its_session_for_its_owner_only() {
        let handles = SessionHandles::in_memory(Seals::local());
        let limits = Limits::default();
        let first = handles.open(None, "alice", &limits).await.unwrap();
        let handle = handles.hand_out(&first).await.unwrap();
        let again = handles.open(Some(&handle), "alice", &limits).await.unwrap();
        assert_eq!(again.id, first.id);
        assert_eq!(
            handles
                .open(Some(&handle), "bob", &limits)
                .await
                .unwrap_err(),
            SessionHandleError::Forged
        );
        assert_eq!(
            handles
                .open(Some("garbage"), "alice", &limits)
                .await
                .unwrap_err(),
            SessionHandleError::Forged
        );
    }

    #[tokio::test]
    async fn an_empty_session_is_kept_only_once_a_handle_names_it() {
        let keeper = Arc::new(MemoryKeeper::default());
        let handles = SessionHandles {
            seals: Seals::local(),
            keeper: keeper.clone(),
        };
        let limits = Limits::default();
        let fresh = handles.open(None, "", &limits).await.unwrap();
        let handle = handles.hand_out(&fresh).await.unwrap();
        assert_eq!(keeper.count(), 0, "nothing to keep");
        let named = handles.open(Some(&handle), "", &limits).await.unwrap();
        assert_eq!(keeper.count(), 1, "a handle named it");
        assert_eq!(named.id, fresh.id);
    }
}
