//! What toolweave hands out and takes back sealed: the `requestState` of a paused execution (what
//! a client speaking MCP 2026-07-28 echoes back when it retries an `execute_code` call with the
//! answers to toolweave's questions, and what the model passes as `"resume"` to pick up an
//! execution that waits for a person), and session handles (what the model passes as
//! `"session"` to keep state without a protocol session, [`crate::handles`]).
//!
//! The client may send back anything, so nothing is trusted as it comes: it is sealed with rmcp's
//! [`RequestStateCodec`] (HMAC-SHA256 under a key drawn at random when the process starts and
//! never shown), bound to what it is for, to the identity that made the call and (for a state) to
//! the tool it called, and it expires. A state names a paused execution, kept in memory
//! ([`crate::rounds`]), and the round it paused at; a session handle names a session; neither
//! carries anything else. What another process sealed (another copy, or this one before a
//! restart) does not open, unless the processes share a key: copies given the same `--state`
//! seal with the key kept there ([`crate::shared`]).

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde::{Deserialize, Serialize};

/// Bytes of key drawn for the process.
const KEY_BYTES: usize = 32;

/// What a sealed state names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Paused {
    /// The paused execution's id (random).
    pub(crate) execution: String,
    /// The round it paused at: a state of an earlier round does not resume it again.
    pub(crate) round: u64,
}

/// Seals and opens states with this process's key.
pub(crate) struct Sealer {
    codec: RequestStateCodec,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer { .. }")
    }
}

/// What a sealed session handle names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SessionRef {
    /// The session's id (random).
    #[serde(rename = "s")]
    pub(crate) session: String,
}

/// Why a session handle did not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HandleUnsealed {
    /// Its time was up.
    Expired,
    /// It was changed, made for another identity, or by another process.
    Forged,
}

/// What a sealed value is for: a value sealed for one purpose never opens as another.
const PURPOSE_STATE: &str = "requestState";
const PURPOSE_SESSION: &str = "session";

/// Why a state did not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unsealed {
    /// Its time was up.
    Expired,
    /// It was changed, made for another identity or tool, or by another process.
    Forged,
}

impl Unsealed {
    /// Why, in words for the client, naming the state as it came (`what`: its `requestState`,
    /// or its `"resume"`).
    pub(crate) fn words(self, what: &str) -> String {
        match self {
            Self::Expired => format!(
                "its {what} has expired: the paused execution was given up on; run the code again"
            ),
            Self::Forged => format!(
                "its {what} was not made by this toolweave process for this caller and tool (it \
                 was changed, made for another identity or tool, or by another process, such as \
                 before a restart); send back the {what} of the last answer unchanged, or run \
                 the code again"
            ),
        }
    }
}

impl Sealer {
    /// A sealer with a fresh random key. `Err` when the system gives no randomness.
    pub(crate) fn new() -> Result<Self, String> {
        let mut key = vec![0u8; KEY_BYTES];
        getrandom::fill(&mut key).map_err(|error| format!("no randomness for a key: {error}"))?;
        Self::with_key(key)
    }

    /// A sealer with `key` (shared by the copies that keep state together).
    pub(crate) fn with_key(key: Vec<u8>) -> Result<Self, String> {
        let codec = RequestStateCodec::try_new(key).map_err(|error| error.to_string())?;
        Ok(Self { codec })
    }

    /// `paused`, sealed for `caller` (the identity's name, empty for none) calling `tool`,
    /// valid for `ttl`.
    pub(crate) fn seal(
        &self,
        paused: &Paused,
        caller: &str,
        tool: &str,
        ttl: Duration,
    ) -> Result<String, String> {
        let bound = bound_to(&[PURPOSE_STATE, caller, tool]);
        self.codec
            .seal_json_with(paused, &SealOptions::new().associated_data(&bound).ttl(ttl))
            .map_err(|error| error.to_string())
    }

    /// What `state` names, if this process sealed it for `caller` calling `tool` and it has not
    /// expired.
    pub(crate) fn open(&self, state: &str, caller: &str, tool: &str) -> Result<Paused, Unsealed> {
        self.codec
            .open_json_with(state, &bound_to(&[PURPOSE_STATE, caller, tool]))
            .map_err(|error| match error {
                RequestStateError::Expired => Unsealed::Expired,
                _ => Unsealed::Forged,
            })
    }

    /// A handle of `session`, sealed for `caller` (the identity's name, empty for none), valid
    /// for `ttl`.
    pub(crate) fn seal_session(
        &self,
        session: &SessionRef,
        caller: &str,
        ttl: Duration,
    ) -> Result<String, String> {
        let bound = bound_to(&[PURPOSE_SESSION, caller]);
        self.codec
            .seal_json_with(
                session,
                &SealOptions::new().associated_data(&bound).ttl(ttl),
            )
            .map_err(|error| error.to_string())
    }

    /// The session `handle` names, if this process sealed it for `caller` and it has not
    /// expired.
    pub(crate) fn open_session(
        &self,
        handle: &str,
        caller: &str,
    ) -> Result<SessionRef, HandleUnsealed> {
        self.codec
            .open_json_with(handle, &bound_to(&[PURPOSE_SESSION, caller]))
            .map_err(|error| match error {
                RequestStateError::Expired => HandleUnsealed::Expired,
                _ => HandleUnsealed::Forged,
            })
    }
}

/// The one sealer of a process, shared by paused executions and session handles: with a key of
/// its own, or, with `--state`, the key the copies share, read from the backend (until it is
/// read, nothing is sealed or opened, and the error says why).
pub(crate) struct Seals {
    sealer: OnceLock<Sealer>,
    /// Why there is no sealer yet.
    missing: Mutex<String>,
}

impl std::fmt::Debug for Seals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Seals { .. }")
    }
}

/// How often a copy asks the backend for the shared key again while it has none.
const KEY_RETRY: Duration = Duration::from_secs(1);

impl Seals {
    /// Seals with a key of this process's own, drawn now.
    pub(crate) fn local() -> Arc<Self> {
        let seals = Self {
            sealer: OnceLock::new(),
            missing: Mutex::new(String::new()),
        };
        match Sealer::new() {
            Ok(sealer) => {
                let _ = seals.sealer.set(sealer);
            }
            Err(error) => {
                tracing::error!(%error, "handles and requestState cannot be sealed");
                *seals.missing.lock().unwrap_or_else(PoisonError::into_inner) = format!(
                    "this process has no key to seal handles with (the system gave no                      randomness: {error})"
                );
            }
        }
        Arc::new(seals)
    }

    /// Seals with the key the copies share in `shared`: read now, or, while the backend does not
    /// answer, every [`KEY_RETRY`] until it does.
    pub(crate) async fn shared(shared: Arc<crate::shared::SharedState>) -> Arc<Self> {
        let seals = Arc::new(Self {
            sealer: OnceLock::new(),
            missing: Mutex::new(format!(
                "the key copies share has not been read from {} yet",
                shared.url()
            )),
        });
        if seals.read_key(&shared).await {
            return seals;
        }
        let weak = Arc::downgrade(&seals);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(KEY_RETRY).await;
                let Some(seals) = weak.upgrade() else { return };
                if seals.read_key(&shared).await {
                    tracing::info!(url = shared.url(), "the key copies share was read");
                    return;
                }
            }
        });
        seals
    }

    /// Reads the shared key; whether there is a sealer now.
    async fn read_key(&self, shared: &crate::shared::SharedState) -> bool {
        match shared.sealing_key().await.and_then(Sealer::with_key) {
            Ok(sealer) => {
                let _ = self.sealer.set(sealer);
                true
            }
            Err(why) => {
                *self.missing.lock().unwrap_or_else(PoisonError::into_inner) = why;
                false
            }
        }
    }

    /// The sealer, or why there is none.
    pub(crate) fn get(&self) -> Result<&Sealer, String> {
        self.sealer.get().ok_or_else(|| {
            self.missing
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        })
    }
}

/// The context a sealed value is bound to: its purpose, the caller and (for a state) the tool,
/// each length-prefixed so that no two lists run together into the same bytes.
fn bound_to(parts: &[&str]) -> Vec<u8> {
    let mut bound = Vec::with_capacity(parts.iter().map(|part| 8 + part.len()).sum());
    for part in parts {
        bound.extend_from_slice(&(part.len() as u64).to_be_bytes());
        bound.extend_from_slice(part.as_bytes());
    }
    bound
}

/// A random id for a session or a paused execution (32 hex digits). The sealed handle or state
/// is what protects it; the id only has to be unique, also among copies sharing `--state`, so
/// without randomness it is made of this process's id, the time and a counter.
pub(crate) fn random_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        return format!(
            "n{}-{nanos}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paused() -> Paused {
        Paused {
            execution: "e1".to_owned(),
            round: 2,
        }
    }

    #[test]
    fn a_state_opens_only_for_its_caller_and_tool() {
        let sealer = Sealer::new().unwrap();
        let state = sealer
            .seal(&paused(), "alice", "execute_code", Duration::from_secs(60))
            .unwrap();
        assert_eq!(sealer.open(&state, "alice", "execute_code"), Ok(paused()));
        assert_eq!(
            sealer.open(&state, "bob", "execute_code"),
            Err(Unsealed::Forged)
        );
        assert_eq!(
            sealer.open(&state, "alice", "other_tool"),
            Err(Unsealed::Forged)
        );
        // The caller and tool cannot be shifted into each other.
        assert_eq!(
            sealer.open(&state, "aliceexecute_code", ""),
            Err(Unsealed::Forged)
        );
    }

    #[test]
    fn a_changed_or_foreign_state_does_not_open() {
        let sealer = Sealer::new().unwrap();
        let state = sealer
            .seal(&paused(), "", "execute_code", Duration::from_secs(60))
            .unwrap();
        let mut changed = state.clone().into_bytes();
        let last = changed.len() - 1;
        changed[last] = if changed[last] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(changed).unwrap();
        assert_eq!(
            sealer.open(&changed, "", "execute_code"),
            Err(Unsealed::Forged)
        );
        assert_eq!(
            sealer.open("not a state", "", "execute_code"),
            Err(Unsealed::Forged)
        );
        // Another process's key.
        let other = Sealer::new().unwrap();
        assert_eq!(
            other.open(&state, "", "execute_code"),
            Err(Unsealed::Forged)
        );
    }

    #[test]
    fn a_session_handle_opens_for_its_caller_only_and_never_as_a_state() {
        let sealer = Sealer::new().unwrap();
        let named = SessionRef {
            session: "s1".to_owned(),
        };
        let handle = sealer
            .seal_session(&named, "alice", Duration::from_secs(60))
            .unwrap();
        assert_eq!(sealer.open_session(&handle, "alice"), Ok(named));
        assert_eq!(
            sealer.open_session(&handle, "bob"),
            Err(HandleUnsealed::Forged)
        );
        assert_eq!(
            sealer.open(&handle, "alice", "session"),
            Err(Unsealed::Forged)
        );
        let state = sealer
            .seal(&paused(), "alice", "", Duration::from_secs(60))
            .unwrap();
        assert_eq!(
            sealer.open_session(&state, "alice"),
            Err(HandleUnsealed::Forged)
        );
        let short = sealer
            .seal_session(
                &SessionRef {
                    session: "s2".to_owned(),
                },
                "",
                Duration::from_millis(1),
            )
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(
            sealer.open_session(&short, ""),
            Err(HandleUnsealed::Expired)
        );
    }

    #[test]
    fn a_state_expires() {
        let sealer = Sealer::new().unwrap();
        let state = sealer
            .seal(&paused(), "", "execute_code", Duration::from_millis(1))
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(
            sealer.open(&state, "", "execute_code"),
            Err(Unsealed::Expired)
        );
    }
}
