//! How a caller ends a server's current run when it finds the connection broken (a remote
//! server that went away shows up only when a request fails).

use std::sync::{Arc, Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

/// Lets a caller end the current run when it finds the connection broken (a remote server that
/// went away shows up only when a request fails).
#[derive(Clone, Default)]
pub(crate) struct Breaker {
    token: CancellationToken,
    cause: Arc<Mutex<Option<String>>>,
}

impl Breaker {
    /// Ends the run; the first cause given is the one reported.
    pub(crate) fn trip(&self, cause: String) {
        self.cause
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(cause);
        self.token.cancel();
    }

    pub(crate) async fn tripped(&self) -> String {
        self.token.cancelled().await;
        self.cause
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_default()
    }
}
