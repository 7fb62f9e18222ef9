//! Health for probes and load balancers: `/healthz` (the process serves HTTP) and `/readyz` (it
//! takes executions: 503 while its servers are still starting or while it drains after SIGTERM).
//!
//! Both answer without a bearer token, since probes carry none, so they say nothing a stranger
//! should not learn: a state, and the names of the configured servers that are not ready (no
//! URL, command, header or error text).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use toolweave_core::{DISCOVERY_WAIT, Gateway, ServerState};

/// Alive: the process answers HTTP.
pub const HEALTH_PATH: &str = "/healthz";
/// Ready: the process takes executions.
pub const READY_PATH: &str = "/readyz";

/// Whether this copy takes new work. Cheap to clone; every clone is the same state.
#[derive(Debug, Clone)]
pub struct Readiness {
    draining: Arc<AtomicBool>,
    started: Instant,
}

impl Readiness {
    /// Ready once its servers have started (or [`DISCOVERY_WAIT`] has passed), until it drains.
    pub fn new() -> Self {
        Self {
            draining: Arc::new(AtomicBool::new(false)),
            started: Instant::now(),
        }
    }

    /// From now on this copy drains: `/readyz` answers 503 and new sessions are refused.
    pub fn drain(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// Whether it drains.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }
}

impl Default for Readiness {
    fn default() -> Self {
        Self::new()
    }
}

/// `/healthz`: 200 whenever the process answers.
pub fn alive() -> Response {
    answer(StatusCode::OK, json!({ "status": "alive" }))
}

/// `/readyz`: 200 `{"status": "ready"}` when this copy takes executions; 503 with `"starting"`
/// while its servers start (for at most [`DISCOVERY_WAIT`]: a server slower than that, like one
/// that failed, does not keep it out of service, since every copy runs the same servers), or
/// `"draining"` after SIGTERM. `servers` names the configured servers by state, so one that is
/// down shows whatever the status.
pub fn ready(readiness: &Readiness, gateway: &Gateway) -> Response {
    let mut ready = Vec::new();
    let mut starting = Vec::new();
    let mut failed = Vec::new();
    let mut stopped = Vec::new();
    for status in gateway.upstream().status() {
        match status.state {
            ServerState::Ready { .. } => ready.push(status.name),
            ServerState::Starting => starting.push(status.name),
            ServerState::Failed { .. } => failed.push(status.name),
            ServerState::Stopped => stopped.push(status.name),
        }
    }
    let state = if readiness.is_draining() {
        "draining"
    } else if !starting.is_empty() && readiness.started.elapsed() < DISCOVERY_WAIT {
        "starting"
    } else {
        "ready"
    };
    let code = if state == "ready" {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    answer(
        code,
        json!({
            "status": state,
            "servers": {
                "ready": ready,
                "starting": starting,
                "failed": failed,
                "stopped": stopped,
            },
        }),
    )
}

fn answer(code: StatusCode, body: serde_json::Value) -> Response {
    (
        code,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        format!("{body}\n"),
    )
        .into_response()
}
