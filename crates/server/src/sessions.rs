//! Where HTTP sessions live: rmcp's in-memory sessions, with ids that can name the copy that
//! holds them (`--session-id-prefix`).
//!
//! Behind a load balancer every request of a session must reach the copy that opened it. A
//! balancer that can remember which copy handed out an id (HAProxy's stick tables) needs
//! nothing more; one that cannot (open-source nginx) can route by the id itself when each copy
//! begins its ids with a name of its own (`copy1.` then a random UUID).

use std::sync::Arc;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId, session_id};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker, create_local_session,
};

/// The longest prefix a session id may begin with.
pub const MAX_PREFIX_BYTES: usize = 32;

/// A session id prefix that is not letters, digits, `-` and `_`, or too long.
#[derive(Debug, thiserror::Error)]
#[error(
    "--session-id-prefix {prefix:?}: use 1 to {MAX_PREFIX_BYTES} letters, digits, '-' or '_' \
     (the copy's name, such as copy1); a balancer matches the id's start up to the '.' after it"
)]
pub struct PrefixError {
    /// As given.
    pub prefix: String,
}

/// Checks a prefix; the prefix with the `.` that ends it in every id.
pub fn session_id_prefix(prefix: &str) -> Result<String, PrefixError> {
    let valid = !prefix.is_empty()
        && prefix.len() <= MAX_PREFIX_BYTES
        && prefix
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_');
    if valid {
        Ok(format!("{prefix}."))
    } else {
        Err(PrefixError {
            prefix: prefix.to_owned(),
        })
    }
}

/// rmcp's local sessions, their ids beginning with a prefix when one is set.
#[derive(Debug, Default)]
pub struct Sessions {
    local: LocalSessionManager,
    /// With its closing `.`.
    prefix: Option<String>,
}

impl Sessions {
    /// In-memory sessions whose ids begin with `prefix` (checked by [`session_id_prefix`]).
    pub fn new(local: LocalSessionManager, prefix: Option<String>) -> Self {
        Self { local, prefix }
    }

    /// How many sessions are open.
    pub async fn count(&self) -> usize {
        self.local.sessions.read().await.len()
    }
}

type Managed<T> = Result<T, LocalSessionManagerError>;

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Managed<(SessionId, Self::Transport)> {
        let Some(prefix) = &self.prefix else {
            return self.local.create_session().await;
        };
        // What LocalSessionManager does, with an id of this copy's.
        let id: SessionId = Arc::from(format!("{prefix}{}", session_id()));
        let (handle, worker) = create_local_session(id.clone(), self.local.session_config.clone());
        self.local.sessions.write().await.insert(id.clone(), handle);
        Ok((id, WorkerTransport::spawn(worker)))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Managed<ServerJsonRpcMessage> {
        self.local.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Managed<bool> {
        self.local.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Managed<()> {
        self.local.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Managed<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static> {
        self.local.create_stream(id, message).await
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Managed<()> {
        self.local.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Managed<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static> {
        self.local.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Managed<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static> {
        self.local.resume(id, last_event_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_is_a_plain_name() {
        assert_eq!(session_id_prefix("copy1").unwrap(), "copy1.");
        assert_eq!(session_id_prefix("eu-west_2").unwrap(), "eu-west_2.");
        for bad in ["", "a.b", "a b", "ü", &"x".repeat(33)] {
            assert!(session_id_prefix(bad).is_err(), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn ids_begin_with_the_prefix() {
        let sessions = Sessions::new(LocalSessionManager::default(), Some("copy2.".to_owned()));
        let (id, _transport) = sessions.create_session().await.unwrap();
        assert!(id.starts_with("copy2."), "{id}");
        assert!(sessions.has_session(&id).await.unwrap());
        assert_eq!(sessions.count().await, 1);
        let plain = Sessions::default();
        let (id, _transport) = plain.create_session().await.unwrap();
        assert!(!id.contains('.'), "{id}");
    }
}
