//! What copies of toolweave share with `--state redis://HOST:PORT/N`: the key that seals
//! `requestState` and session handles, the sessions handles name (their store and result
//! handles), and which copy holds each paused execution.
//!
//! Redis (or Valkey) keeps it all under keys that begin with `toolweave:`, each with an expiry, so
//! nothing outlives its use:
//!
//! - `toolweave:seal-key`: the sealing key, drawn by the first copy that starts (`SET NX`) and read
//!   by the others; it has no expiry. Deleting it makes every handle and state made so far fail
//!   to open, as a restart does without `--state`.
//! - `toolweave:session:{id}`: the identity that owns the session; `…:store` (a hash of JSON texts
//!   by key) and `…:handle:{handle}` (a JSON text each), kept `--session-ttl-ms` after the last
//!   use (a handle `--handle-ttl-ms` after it was made).
//! - `toolweave:paused:{execution}`: the address of the copy that holds a paused execution, for as
//!   long as the execution waits for its client.
//!
//! Every command is bounded by [`COMMAND_TIMEOUT`]: a Redis that is down or slow fails the one
//! thing that needs it with an error naming the URL, and everything else is served as usual.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use toolweave_core::{RemoteHandles, StateChanges};

/// The longest one command may take, connecting included.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);

/// What every key begins with.
const PREFIX: &str = "toolweave:";

/// Bytes of the sealing key.
const KEY_BYTES: usize = 32;

/// Redis or Valkey, shared by the copies given the same `--state`.
pub struct SharedState {
    /// The URL as given, without a password, for errors.
    shown: String,
    connection: ConnectionManager,
}

impl std::fmt::Debug for SharedState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedState")
            .field("url", &self.shown)
            .finish_non_exhaustive()
    }
}

impl SharedState {
    /// The backend at `url` (`redis://[:PASSWORD@]HOST[:PORT][/N]`). Nothing is connected yet:
    /// the first command connects, and a backend that is down fails commands, not this.
    pub fn open(url: &str) -> Result<Arc<Self>, String> {
        let shown = shown_url(url);
        if !url.starts_with("redis://") {
            return Err(format!(
                "--state {shown}: give a Redis or Valkey URL, redis://HOST:PORT/N (N: the \
                 database number, 0 when left out)"
            ));
        }
        let client = redis::Client::open(url)
            .map_err(|error| format!("--state {shown}: not a Redis URL ({error})"))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(COMMAND_TIMEOUT))
            .set_response_timeout(Some(COMMAND_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(200));
        let connection = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|error| format!("--state {shown}: {error}"))?;
        Ok(Arc::new(Self { shown, connection }))
    }

    /// The URL, without its password.
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// Runs `command`, bounded by [`COMMAND_TIMEOUT`]; `Err` says, for `what` (what needed it),
    /// that the backend did not answer and what to do.
    async fn run<T: redis::FromRedisValue>(
        &self,
        what: &str,
        command: &redis::Cmd,
    ) -> Result<T, String> {
        let mut connection = self.connection.clone();
        let answer = tokio::time::timeout(COMMAND_TIMEOUT, command.query_async(&mut connection));
        self.checked(what, answer.await)
    }

    async fn run_pipeline(&self, what: &str, pipeline: &redis::Pipeline) -> Result<(), String> {
        let mut connection = self.connection.clone();
        let answer = tokio::time::timeout(
            COMMAND_TIMEOUT,
            pipeline.query_async::<redis::Value>(&mut connection),
        );
        self.checked(what, answer.await).map(|_| ())
    }

    fn checked<T>(
        &self,
        what: &str,
        answer: Result<redis::RedisResult<T>, tokio::time::error::Elapsed>,
    ) -> Result<T, String> {
        let why = match answer {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(error)) => error.to_string(),
            Err(_) => format!("no answer within {} s", COMMAND_TIMEOUT.as_secs()),
        };
        tracing::warn!(url = %self.shown, %why, "the state backend failed: {what}");
        Err(format!(
            "the state backend at {} (--state) failed while {what}: {why}. Check that Redis or \
             Valkey runs there and answers; meanwhile what needs it fails and the rest is served",
            self.shown
        ))
    }

    /// The key the copies seal with: the one kept there, or a new one kept there first.
    pub async fn sealing_key(&self) -> Result<Vec<u8>, String> {
        let what = "reading the key that seals handles";
        let mut fresh = [0u8; KEY_BYTES];
        getrandom::fill(&mut fresh).map_err(|error| format!("no randomness for a key: {error}"))?;
        let key = format!("{PREFIX}seal-key");
        let _: Option<String> = self
            .run(what, redis::cmd("SET").arg(&key).arg(hex(&fresh)).arg("NX"))
            .await?;
        let kept: Option<String> = self.run(what, redis::cmd("GET").arg(&key)).await?;
        kept.as_deref()
            .and_then(unhex)
            .filter(|key| key.len() == KEY_BYTES)
            .ok_or_else(|| {
                format!(
                    "the state backend at {} holds a {key} that is not {KEY_BYTES} bytes in hex; \
                     delete it (every copy then draws a new one at start)",
                    self.shown
                )
            })
    }

    /// The owner and store of session `id`, `None` when it is not kept (new, or forgotten).
    pub async fn session(
        &self,
        id: &str,
    ) -> Result<Option<(String, BTreeMap<String, String>)>, String> {
        let what = "reading a session";
        let owner: Option<String> = self
            .run(what, redis::cmd("GET").arg(session_key(id)))
            .await?;
        let Some(owner) = owner else {
            return Ok(None);
        };
        let store: BTreeMap<String, String> = self
            .run(
                what,
                redis::cmd("HGETALL").arg(format!("{}:store", session_key(id))),
            )
            .await?;
        Ok(Some((owner, store)))
    }

    /// Keeps session `id` of `owner` for `ttl` from now, with what an execution `changes`d.
    pub async fn keep_session(
        &self,
        id: &str,
        owner: &str,
        ttl: Duration,
        changes: StateChanges,
    ) -> Result<(), String> {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let session = session_key(id);
        let store = format!("{session}:store");
        let mut pipeline = redis::pipe();
        pipeline.atomic();
        pipeline
            .cmd("SET")
            .arg(&session)
            .arg(owner)
            .arg("PX")
            .arg(ttl_ms)
            .ignore();
        for (key, text) in changes.store {
            match text {
                Some(text) => pipeline.cmd("HSET").arg(&store).arg(key).arg(text).ignore(),
                None => pipeline.cmd("HDEL").arg(&store).arg(key).ignore(),
            };
        }
        pipeline.cmd("PEXPIRE").arg(&store).arg(ttl_ms).ignore();
        for (handle, value, kept_for) in changes.handles {
            let kept_ms = u64::try_from(kept_for.as_millis())
                .unwrap_or(u64::MAX)
                .max(1);
            pipeline
                .cmd("SET")
                .arg(format!("{session}:handle:{handle}"))
                .arg(value.to_string())
                .arg("PX")
                .arg(kept_ms)
                .ignore();
        }
        self.run_pipeline("keeping a session's store and result handles", &pipeline)
            .await
    }

    /// Records that the copy at `holder` holds paused execution `id`, for `ttl`.
    pub async fn hold(&self, id: &str, holder: &str, ttl: Duration) -> Result<(), String> {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        self.run::<()>(
            "recording which copy holds a paused execution",
            redis::cmd("SET")
                .arg(paused_key(id))
                .arg(holder)
                .arg("PX")
                .arg(ttl_ms),
        )
        .await
    }

    /// The address of the copy that holds paused execution `id`, if one does.
    pub async fn holder(&self, id: &str) -> Result<Option<String>, String> {
        self.run(
            "finding the copy that holds a paused execution",
            redis::cmd("GET").arg(paused_key(id)),
        )
        .await
    }

    /// Forgets where paused execution `id` was held (it finished or was given up on).
    pub async fn release(&self, id: &str) {
        // The record expires anyway; a failure was logged.
        let _ = self
            .run::<()>(
                "forgetting a paused execution",
                redis::cmd("DEL").arg(paused_key(id)),
            )
            .await;
    }
}

/// Result handles of session `session`, read from the backend.
pub(crate) struct SessionHandlesThere {
    pub(crate) shared: Arc<SharedState>,
    pub(crate) session: String,
}

impl RemoteHandles for SessionHandlesThere {
    fn get(&self, id: &str) -> BoxFuture<'_, Result<Option<String>, String>> {
        let key = format!("{}:handle:{id}", session_key(&self.session));
        Box::pin(async move {
            self.shared
                .run("reading a result handle", redis::cmd("GET").arg(key))
                .await
        })
    }
}

fn session_key(id: &str) -> String {
    format!("{PREFIX}session:{id}")
}

fn paused_key(id: &str) -> String {
    format!("{PREFIX}paused:{id}")
}

/// `url` without the password it may carry.
fn shown_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.split_once('@') {
        Some((_, host)) => format!("{scheme}://***@{host}"),
        None => url.to_owned(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(
            shown_url("redis://:secret@127.0.0.1:6379/2"),
            "redis://***@127.0.0.1:6379/2"
        );
        assert_eq!(shown_url("redis://127.0.0.1/0"), "redis://127.0.0.1/0");
        assert_eq!(unhex(&hex(&[0, 255, 16])), Some(vec![0, 255, 16]));
    }

    #[test]
    fn only_a_redis_url_is_taken() {
        let error = SharedState::open("http://127.0.0.1:6379").unwrap_err();
        assert!(error.contains("redis://HOST:PORT/N"), "{error}");
    }
}
