//! What one MCP session keeps across its executions: the store (JSON values by key, set and read
//! with `store.*`) and result handles (values kept for a while: a result too large for an
//! answer, or one code keeps with `handle(value)`, read back with `results.get`).
//!
//! The host keeps both, never the guest: a worker process serves one execution and ends, so
//! whatever must outlive it lives here, and the guest reaches it only by message through the
//! bridge. Both are bounded by the limits (`--max-store-bytes`, `--max-store-keys`,
//! `--max-handle-bytes`, `--handle-ttl-ms`); a handle is dropped when its time is up, by a timer
//! of its own, so the memory of results nobody reads again goes back to the system without
//! waiting for the session to do anything. The tokens redaction gave the session's model are
//! kept here too (`redaction.rs`). Everything goes when the session's handler is dropped
//! (the stdio process ends, an HTTP session is closed or expires).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::time::Instant;
use toolweave_config::Limits;
use toolweave_sandbox::SessionAsk;

use crate::error::SessionStateError;
use crate::json_size::value_json_len;
use crate::redaction::Tokens;

/// How much of a kept value's JSON its description previews.
const PREVIEW_BYTES: usize = 300;
/// How many keys of an object a shape lists before it counts the rest.
const SHAPE_KEYS: usize = 20;
/// How deep a shape goes into nested arrays and objects.
const SHAPE_DEPTH: usize = 4;
/// How long a shape may be, in bytes.
const MAX_SHAPE_BYTES: usize = 2000;
/// How many handles that are gone a session remembers, to say why one is gone.
const REMEMBERED_GONE: usize = 1000;
/// Once handles of this many bytes have expired, free memory is handed back to the system.
const TRIM_BYTES: usize = 1024 * 1024;
/// The number the next session made in this process gets.
static NEXT_NUMBER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Bytes of handles expired since free memory was last handed back.
static FREED_SINCE_TRIM: AtomicUsize = AtomicUsize::new(0);

/// The store and result handles of one MCP session. Made by the server for each session (a
/// program that embeds toolweave gets one per gateway by default); dropped with it.
pub struct SessionState {
    /// Whether there is a session to keep anything for: a request that stands alone (HTTP
    /// without a session) has none, and code that asks is told so.
    session: bool,
    limits: StateLimits,
    store: Mutex<Store>,
    handles: Mutex<Handles>,
    /// The values redaction replaced in what this session's model read, by token.
    tokens: Arc<Tokens>,
    /// Tells this session's handle ids from another's (and from a process before a restart).
    tag: String,
    /// Which of this process's states it is: no two have the same.
    number: u64,
    /// Itself, for the timers that drop handles when their time is up.
    this: Weak<SessionState>,
    /// What changed since [`SessionState::take_changes`], when the state is kept elsewhere
    /// (`--state`): only changes are written back, so executions of one session on several
    /// copies do not undo each other's keys.
    journal: Option<Mutex<StateChanges>>,
    /// Where handles made by other executions are read, when the state is kept elsewhere.
    remote: Option<Arc<dyn RemoteHandles>>,
}

/// Where the result handles of a session kept elsewhere (`--state`) are read: a handle made by
/// an earlier execution, maybe on another copy, is read when code asks for it.
pub trait RemoteHandles: Send + Sync {
    /// The JSON text of handle `id`, `None` when it is not kept (unknown, or its time was up);
    /// `Err` names the backend and what to do when it did not answer.
    fn get(&self, id: &str) -> futures::future::BoxFuture<'_, Result<Option<String>, String>>;
}

/// What an execution changed in a state kept elsewhere: store keys set (`Some` JSON text) or
/// deleted (`None`), and the result handles it made.
#[derive(Debug, Default)]
pub struct StateChanges {
    /// Store keys and their new JSON texts (`None`: deleted).
    pub store: BTreeMap<String, Option<String>>,
    /// Handles made: id, value, and how long it is kept from now.
    pub handles: Vec<(String, Arc<Value>, Duration)>,
}

impl StateChanges {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.store.is_empty() && self.handles.is_empty()
    }
}

impl std::fmt::Debug for SessionState {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SessionState")
            .field("tag", &self.tag)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Copy)]
struct StateLimits {
    store_bytes: usize,
    store_keys: usize,
    handle_bytes: usize,
    handle_ttl: Duration,
}

/// JSON texts by key; `bytes` counts keys and texts.
#[derive(Default)]
struct Store {
    values: BTreeMap<String, String>,
    bytes: usize,
}

#[derive(Default)]
struct Handles {
    kept: HashMap<String, Kept>,
    /// Ids, oldest first: the order they are dropped in to make room.
    order: VecDeque<String>,
    bytes: usize,
    /// Recent handles that are gone, and why.
    gone: VecDeque<(String, Gone)>,
    next: u64,
}

struct Kept {
    value: Arc<Value>,
    bytes: usize,
    expires: Instant,
}

/// Why a handle is no longer kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gone {
    /// Its time (`--handle-ttl-ms`) was up.
    Expired,
    /// Newer handles needed its room (`--max-handle-bytes`).
    Evicted,
}

/// A value just kept: its handle's id, and its description for code and the model.
pub(crate) struct Described {
    pub(crate) id: String,
    pub(crate) value: Value,
}

impl SessionState {
    /// An empty state bounded by `limits`.
    pub fn new(limits: &Limits) -> Arc<Self> {
        Self::made(limits, true)
    }

    /// The state of an execution that belongs to no session: nothing can be kept for a later
    /// execution, and code that asks is told why. (toolweave's MCP server gives a request
    /// without a protocol session the session its handle names instead.)
    pub fn sessionless(limits: &Limits) -> Arc<Self> {
        Self::made(limits, false)
    }

    fn made(limits: &Limits, session: bool) -> Arc<Self> {
        let tag = {
            use std::hash::{BuildHasher, Hasher};
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u64(0);
            format!("{:04x}", hasher.finish() & 0xffff)
        };
        Self::built(limits, session, tag, None, None)
    }

    /// A state kept elsewhere (`--state`): its store as kept there (JSON texts by key), and
    /// where its handles are read. What executions change is taken with
    /// [`SessionState::take_changes`] to be written back.
    pub fn shared(
        limits: &Limits,
        store: BTreeMap<String, String>,
        remote: Arc<dyn RemoteHandles>,
    ) -> Arc<Self> {
        // Handles of one session are made on many copies: their ids must not meet.
        let mut bytes = [0u8; 8];
        let tag = match getrandom::fill(&mut bytes) {
            Ok(()) => bytes.iter().map(|byte| format!("{byte:02x}")).collect(),
            Err(_) => {
                use std::hash::{BuildHasher, Hasher};
                let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
                hasher.write_u64(0);
                format!("{:016x}", hasher.finish())
            }
        };
        let state = Self::built(limits, true, tag, Some(Mutex::default()), Some(remote));
        {
            let mut kept = state.store();
            kept.bytes = store.iter().map(|(key, text)| key.len() + text.len()).sum();
            kept.values = store;
        }
        state
    }

    fn built(
        limits: &Limits,
        session: bool,
        tag: String,
        journal: Option<Mutex<StateChanges>>,
        remote: Option<Arc<dyn RemoteHandles>>,
    ) -> Arc<Self> {
        Arc::new_cyclic(|this| Self {
            journal,
            remote,
            session,
            limits: StateLimits {
                store_bytes: limits.max_store_bytes,
                store_keys: limits.max_store_keys,
                handle_bytes: limits.max_handle_bytes,
                handle_ttl: limits.handle_ttl,
            },
            store: Mutex::default(),
            handles: Mutex::default(),
            tokens: Arc::default(),
            tag,
            number: NEXT_NUMBER.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            this: this.clone(),
        })
    }

    /// What changed since it was made or last asked (nothing unless the state is kept
    /// elsewhere).
    pub fn take_changes(&self) -> StateChanges {
        self.journal
            .as_ref()
            .map(|journal| {
                std::mem::take(&mut *journal.lock().unwrap_or_else(PoisonError::into_inner))
            })
            .unwrap_or_default()
    }

    fn note(&self, change: impl FnOnce(&mut StateChanges)) {
        if let Some(journal) = &self.journal {
            change(&mut journal.lock().unwrap_or_else(PoisonError::into_inner));
        }
    }

    /// Answers one ask of guest code, reading a handle this state does not hold from where the
    /// state is kept (`--state`).
    pub(crate) async fn answer_async(&self, ask: SessionAsk) -> Result<Value, SessionStateError> {
        if let (
            Some(remote),
            SessionAsk::ResultsGet {
                handle,
                path,
                offset,
                limit,
            },
        ) = (&self.remote, &ask)
            && self.session
            && !self.handles().kept.contains_key(handle)
        {
            let text = remote
                .get(handle)
                .await
                .map_err(|why| SessionStateError::Unreachable {
                    id: handle.clone(),
                    why,
                })?;
            let Some(value) = text.and_then(|text| serde_json::from_str::<Value>(&text).ok())
            else {
                return Err(SessionStateError::UnknownHandle { id: handle.clone() });
            };
            return piece(&value, handle, path.as_deref(), *offset, *limit);
        }
        self.answer(ask)
    }

    /// Answers one ask of guest code.
    pub(crate) fn answer(&self, ask: SessionAsk) -> Result<Value, SessionStateError> {
        if !self.session {
            return Err(SessionStateError::NoSession {
                function: ask.function(),
            });
        }
        match ask {
            SessionAsk::StoreGet { key } => Ok(self
                .store()
                .values
                .get(&key)
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or(Value::Null)),
            SessionAsk::StoreSet { key, value } => self.set(key, &value).map(|()| Value::Null),
            SessionAsk::StoreDelete { key } => {
                let mut store = self.store();
                let removed = store.values.remove(&key);
                if let Some(text) = &removed {
                    store.bytes -= key.len() + text.len();
                }
                drop(store);
                let deleted = removed.is_some();
                self.note(|changes| {
                    changes.store.insert(key, None);
                });
                Ok(Value::Bool(deleted))
            }
            SessionAsk::StoreKeys => Ok(Value::Array(
                self.store()
                    .values
                    .keys()
                    .map(|key| Value::String(key.clone()))
                    .collect(),
            )),
            SessionAsk::ResultsGet {
                handle,
                path,
                offset,
                limit,
            } => {
                let value = self.kept(&handle)?;
                piece(&value, &handle, path.as_deref(), offset, limit)
            }
            SessionAsk::Keep { value } => {
                let bytes = value_json_len(&value);
                self.keep(value, bytes).map(|described| described.value)
            }
        }
    }

    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn handles(&self) -> std::sync::MutexGuard<'_, Handles> {
        self.handles.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self, key: String, value: &Value) -> Result<(), SessionStateError> {
        let text = value.to_string();
        let mut store = self.store();
        let replaced = store
            .values
            .get(&key)
            .map_or(0, |old| key.len() + old.len());
        if replaced == 0 && store.values.len() >= self.limits.store_keys {
            return Err(SessionStateError::StoreKeys {
                limit: self.limits.store_keys,
            });
        }
        let bytes = store.bytes - replaced + key.len() + text.len();
        if bytes > self.limits.store_bytes {
            return Err(SessionStateError::StoreBytes {
                key,
                bytes,
                limit: self.limits.store_bytes,
            });
        }
        store.bytes = bytes;
        store.values.insert(key.clone(), text.clone());
        drop(store);
        self.note(|changes| {
            changes.store.insert(key, Some(text));
        });
        Ok(())
    }

    /// Keeps `value` (`bytes` as JSON) behind a new handle, dropping the oldest handles if it
    /// needs their room, and starts the timer that drops it when its time is up.
    pub(crate) fn keep(&self, value: Value, bytes: usize) -> Result<Described, SessionStateError> {
        if !self.session {
            return Err(SessionStateError::NoSession { function: "handle" });
        }
        if bytes > self.limits.handle_bytes {
            return Err(SessionStateError::HandleTooLarge {
                bytes,
                limit: self.limits.handle_bytes,
            });
        }
        let description = describe(&value, bytes);
        let mut handles = self.handles();
        while handles.bytes + bytes > self.limits.handle_bytes {
            let Some(oldest) = handles.order.front().cloned() else {
                break;
            };
            handles.drop_kept(&oldest, Gone::Evicted);
        }
        handles.next += 1;
        let id = format!("h{}-{}", handles.next, self.tag);
        let expires = Instant::now() + self.limits.handle_ttl;
        let value = Arc::new(value);
        self.note(|changes| {
            changes
                .handles
                .push((id.clone(), value.clone(), self.limits.handle_ttl));
        });
        handles.kept.insert(
            id.clone(),
            Kept {
                value,
                bytes,
                expires,
            },
        );
        handles.order.push_back(id.clone());
        handles.bytes += bytes;
        drop(handles);
        self.expire_at(id.clone(), expires);
        let mut described = Map::new();
        described.insert("handle".to_owned(), Value::String(id.clone()));
        described.extend(description);
        Ok(Described {
            id,
            value: Value::Object(described),
        })
    }

    /// Drops handle `id` at `expires`, unless the session is gone by then.
    fn expire_at(&self, id: String, expires: Instant) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // Outside a runtime nothing can wait: the handle expires when next looked at.
            return;
        };
        let this = self.this.clone();
        runtime.spawn(async move {
            tokio::time::sleep_until(expires).await;
            if let Some(state) = this.upgrade() {
                state.expire(&id);
            }
        });
    }

    fn expire(&self, id: &str) {
        let Some(kept) = self.handles().drop_kept(id, Gone::Expired) else {
            return;
        };
        // Freed memory stays with the allocator until it is handed back: once a megabyte of
        // handles (in any session) has expired since the last time, it is. A large value takes a
        // while to free, so that happens off the protocol threads.
        let freed = FREED_SINCE_TRIM.fetch_add(kept.bytes, Ordering::Relaxed) + kept.bytes;
        if freed >= TRIM_BYTES {
            FREED_SINCE_TRIM.store(0, Ordering::Relaxed);
            tokio::task::spawn_blocking(move || {
                drop(kept);
                toolweave_sandbox::release_free_memory();
            });
        }
    }

    /// The value behind handle `id`, or why there is none.
    fn kept(&self, id: &str) -> Result<Arc<Value>, SessionStateError> {
        let mut handles = self.handles();
        let expired = handles
            .kept
            .get(id)
            .map(|kept| kept.expires <= Instant::now());
        match expired {
            Some(false) => Ok(handles.kept[id].value.clone()),
            Some(true) => {
                handles.drop_kept(id, Gone::Expired);
                Err(self.gone(id, Gone::Expired))
            }
            None => match handles.gone.iter().find(|(gone, _)| gone == id) {
                Some((_, why)) => Err(self.gone(id, *why)),
                None => Err(SessionStateError::UnknownHandle { id: id.to_owned() }),
            },
        }
    }

    fn gone(&self, id: &str, why: Gone) -> SessionStateError {
        match why {
            Gone::Expired => SessionStateError::HandleExpired {
                id: id.to_owned(),
                ttl: self.limits.handle_ttl,
            },
            Gone::Evicted => SessionStateError::HandleEvicted {
                id: id.to_owned(),
                limit: self.limits.handle_bytes,
            },
        }
    }

    /// How many handles are kept and their bytes (for tests and measurements).
    pub fn handles_kept(&self) -> (usize, usize) {
        let handles = self.handles();
        (handles.kept.len(), handles.bytes)
    }

    /// Whether nothing is kept: no store key, no result handle and no redaction token.
    pub fn is_empty(&self) -> bool {
        self.store().values.is_empty() && self.handles().kept.is_empty() && self.tokens.is_empty()
    }

    /// Whether this state belongs to a session (see [`SessionState::sessionless`]).
    pub(crate) fn has_session(&self) -> bool {
        self.session
    }

    /// The number that tells this session from every other of this process; `None` for a
    /// state without a session.
    pub(crate) fn number(&self) -> Option<u64> {
        self.session.then_some(self.number)
    }

    /// The tokens redaction gave in this session; a state without a session has none to
    /// keep, and each of its executions gets tokens of its own.
    pub(crate) fn tokens(&self) -> Arc<Tokens> {
        if self.session {
            self.tokens.clone()
        } else {
            Arc::default()
        }
    }

    /// The TTL of handles, as a warning names it.
    pub(crate) fn handle_ttl(&self) -> Duration {
        self.limits.handle_ttl
    }
}

impl Handles {
    /// Drops handle `id` (remembering why); the value, for the caller to free.
    fn drop_kept(&mut self, id: &str, why: Gone) -> Option<Kept> {
        let kept = self.kept.remove(id)?;
        self.bytes -= kept.bytes;
        if let Some(position) = self.order.iter().position(|kept| kept == id) {
            self.order.remove(position);
        }
        if self.gone.len() == REMEMBERED_GONE {
            self.gone.pop_front();
        }
        self.gone.push_back((id.to_owned(), why));
        Some(kept)
    }
}

/// `{bytes, preview, shape}` of a kept value: its size, the start of its JSON, and its keys and
/// types without values.
fn describe(value: &Value, bytes: usize) -> Map<String, Value> {
    let text = value.to_string();
    let preview = toolweave_jsonrpc::text::cut_marked(text, PREVIEW_BYTES, "…");
    let mut shape = String::new();
    write_shape(value, SHAPE_DEPTH, &mut shape);
    if shape.len() > MAX_SHAPE_BYTES {
        shape = crate::error::cut(shape, MAX_SHAPE_BYTES);
    }
    let mut described = Map::new();
    described.insert("bytes".to_owned(), json!(bytes));
    described.insert("preview".to_owned(), Value::String(preview));
    described.insert("shape".to_owned(), Value::String(shape));
    described
}

/// A value's shape as a type: `{ items: Array(5000) of { id: number, name: string(12) } }`.
/// Lengths of strings (in characters) and arrays are given, since `results.get` reads pieces by
/// them; no value is.
fn write_shape(value: &Value, depth: usize, out: &mut String) {
    use std::fmt::Write;
    if out.len() > MAX_SHAPE_BYTES {
        return;
    }
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(_) => out.push_str("boolean"),
        Value::Number(_) => out.push_str("number"),
        Value::String(text) => {
            let _ = write!(out, "string({})", text.chars().count());
        }
        Value::Array(items) => {
            let _ = write!(out, "Array({})", items.len());
            if let Some(first) = items.first() {
                out.push_str(" of ");
                if depth == 0 {
                    out.push('…');
                } else {
                    write_shape(first, depth - 1, out);
                }
            }
        }
        Value::Object(fields) if depth == 0 => {
            let _ = write!(out, "object({} keys)", fields.len());
        }
        Value::Object(fields) => {
            out.push_str("{ ");
            for (index, (key, field)) in fields.iter().take(SHAPE_KEYS).enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{}: ", Value::String(key.clone()));
                write_shape(field, depth - 1, out);
            }
            if fields.len() > SHAPE_KEYS {
                let _ = write!(out, ", … {} more keys", fields.len() - SHAPE_KEYS);
            }
            out.push_str(" }");
        }
    }
}

/// `results.get`: the part of `value` at `path`, and of a string or array there, `limit`
/// characters or items from `offset`.
fn piece(
    value: &Value,
    handle: &str,
    path: Option<&str>,
    offset: Option<u64>,
    limit: Option<u64>,
) -> Result<Value, SessionStateError> {
    let mut at = value;
    let mut walked = String::new();
    for segment in path.map(path_segments).unwrap_or_default() {
        let next = match at {
            Value::Object(fields) => fields.get(&segment),
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        };
        let Some(next) = next else {
            return Err(SessionStateError::NoSuchPath {
                handle: handle.to_owned(),
                path: path.unwrap_or_default().to_owned(),
                found: if walked.is_empty() {
                    "the value".to_owned()
                } else {
                    walked
                },
                has: what_is_there(at),
            });
        };
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(&segment);
        at = next;
    }
    if offset.is_none() && limit.is_none() {
        return Ok(at.clone());
    }
    let start = usize::try_from(offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let count = usize::try_from(limit.unwrap_or(u64::MAX)).unwrap_or(usize::MAX);
    match at {
        Value::String(text) => Ok(Value::String(
            text.chars().skip(start).take(count).collect(),
        )),
        Value::Array(items) => Ok(Value::Array(
            items.iter().skip(start).take(count).cloned().collect(),
        )),
        other => Err(SessionStateError::NotSliceable {
            handle: handle.to_owned(),
            has: what_is_there(other),
        }),
    }
}

/// `items.3.name` and `items[3].name` alike: `["items", "3", "name"]`.
fn path_segments(path: &str) -> Vec<String> {
    path.split(['.', '[', ']'])
        .filter(|segment| !segment.is_empty())
        .map(str::to_owned)
        .collect()
}

/// What a path segment met, for its error: the keys of an object, the length of an array.
fn what_is_there(value: &Value) -> String {
    match value {
        Value::Object(fields) => {
            let keys: Vec<&str> = fields.keys().take(SHAPE_KEYS).map(String::as_str).collect();
            let more = fields.len().saturating_sub(SHAPE_KEYS);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!("an object with keys {}{more}", keys.join(", "))
        }
        Value::Array(items) => format!("an array of {} items", items.len()),
        Value::String(text) => format!("a string of {} characters", text.chars().count()),
        Value::Number(_) => "a number".to_owned(),
        Value::Bool(_) => "a boolean".to_owned(),
        Value::Null => "null".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(limits: Limits) -> Arc<SessionState> {
        SessionState::new(&limits)
    }

    #[test]
    fn the_store_keeps_values_within_its_bounds() {
        let state = state(Limits {
            max_store_bytes: 20,
            max_store_keys: 2,
            ..Limits::default()
        });
        let set = |key: &str, value: Value| {
            state.answer(SessionAsk::StoreSet {
                key: key.to_owned(),
                value,
            })
        };
        set("a", json!([1, 2])).unwrap();
        assert_eq!(
            state
                .answer(SessionAsk::StoreGet { key: "a".into() })
                .unwrap(),
            json!([1, 2])
        );
        set("b", json!(1)).unwrap();
        let keys = set("c", json!(1)).unwrap_err().to_string();
        assert!(keys.contains("--max-store-keys 2"), "{keys}");
        let bytes = set("a", json!("a long string here"))
            .unwrap_err()
            .to_string();
        assert!(bytes.contains("--max-store-bytes 20"), "{bytes}");
        assert_eq!(
            state
                .answer(SessionAsk::StoreDelete { key: "a".into() })
                .unwrap(),
            json!(true)
        );
        assert_eq!(state.answer(SessionAsk::StoreKeys).unwrap(), json!(["b"]));
        assert_eq!(state.store().bytes, 2);
    }

    #[test]
    fn pieces_of_a_kept_value_are_exact() {
        let state = state(Limits::default());
        let text: String = "é1234567890".repeat(10);
        let value = json!({"items": [{"text": text}], "n": 1});
        let described = state.keep(value.clone(), value_json_len(&value)).unwrap();
        let get = |path: &str, offset: u64, limit: u64| {
            state.answer(SessionAsk::ResultsGet {
                handle: described.id.clone(),
                path: Some(path.to_owned()),
                offset: Some(offset),
                limit: Some(limit),
            })
        };
        let mut joined = String::new();
        for offset in (0..110).step_by(7) {
            joined.push_str(get("items[0].text", offset, 7).unwrap().as_str().unwrap());
        }
        assert_eq!(joined, text);
        let missing = get("items.0.title", 0, 1).unwrap_err().to_string();
        assert!(missing.contains("an object with keys text"), "{missing}");
        assert_eq!(
            described.value["shape"],
            json!("{ \"items\": Array(1) of { \"text\": string(110) }, \"n\": number }")
        );
    }

    struct NoHandles;

    impl RemoteHandles for NoHandles {
        fn get(&self, _: &str) -> futures::future::BoxFuture<'_, Result<Option<String>, String>> {
            Box::pin(async { Ok(None) })
        }
    }

    #[test]
    fn a_shared_state_starts_from_its_store_and_gives_back_only_its_changes() {
        let kept = BTreeMap::from([
            ("a".to_owned(), "1".to_owned()),
            ("b".to_owned(), "2".to_owned()),
        ]);
        let state = SessionState::shared(&Limits::default(), kept, Arc::new(NoHandles));
        assert_eq!(
            state
                .answer(SessionAsk::StoreGet { key: "a".into() })
                .unwrap(),
            json!(1)
        );
        state
            .answer(SessionAsk::StoreSet {
                key: "c".into(),
                value: json!([3]),
            })
            .unwrap();
        state
            .answer(SessionAsk::StoreDelete { key: "b".into() })
            .unwrap();
        let kept = state.keep(json!("x"), 3).unwrap();
        let changes = state.take_changes();
        assert_eq!(
            changes.store,
            BTreeMap::from([
                ("b".to_owned(), None),
                ("c".to_owned(), Some("[3]".to_owned()))
            ])
        );
        assert_eq!(changes.handles.len(), 1);
        assert_eq!(changes.handles[0].0, kept.id);
        assert!(state.take_changes().is_empty(), "each change is given once");
        // A state of one session only, as before, keeps no journal.
        let own = SessionState::new(&Limits::default());
        own.answer(SessionAsk::StoreSet {
            key: "c".into(),
            value: json!(1),
        })
        .unwrap();
        assert!(own.take_changes().is_empty());
    }

    #[tokio::test]
    async fn a_handle_kept_elsewhere_that_is_gone_is_unknown() {
        let state = SessionState::shared(&Limits::default(), BTreeMap::new(), Arc::new(NoHandles));
        let error = state
            .answer_async(SessionAsk::ResultsGet {
                handle: "h1-0123".into(),
                path: None,
                offset: None,
                limit: None,
            })
            .await
            .unwrap_err();
        assert_eq!(
            error,
            SessionStateError::UnknownHandle {
                id: "h1-0123".into()
            }
        );
    }

    #[test]
    fn the_oldest_handles_make_room_and_say_so() {
        let state = state(Limits {
            max_handle_bytes: 10,
            ..Limits::default()
        });
        let first = state.keep(json!("123456"), 8).unwrap();
        state.keep(json!("1234"), 6).unwrap();
        let gone = state
            .answer(SessionAsk::ResultsGet {
                handle: first.id,
                path: None,
                offset: None,
                limit: None,
            })
            .unwrap_err()
            .to_string();
        assert!(gone.contains("--max-handle-bytes 10"), "{gone}");
        assert_eq!(state.handles_kept(), (1, 6));
    }
}
