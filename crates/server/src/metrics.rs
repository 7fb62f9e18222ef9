//! Prometheus metrics (`--metrics`): what the gateway did and where it stands, in the text format
//! Prometheus scrapes, written by the Prometheus project's own client (`prometheus-client`).
//!
//! Counters and histograms are updated as work ends (executions here and in `lib.rs`, tool calls
//! through the gateway's [`Observer`]); gauges (upstream states, workers, sessions) are read from
//! the gateway when a scrape comes. Every label is bounded: languages, outcomes and error kinds
//! are fixed sets, servers are the configured ones, and tool names are not labels (a server may
//! list thousands; traces carry them).

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use toolweave_core::{CallOutcome, Gateway, Language, Observer, ServerState, WorkerKind};

/// The path metrics are served at.
pub const METRICS_PATH: &str = "/metrics";

/// The content type of [`Metrics::render`]'s text (OpenMetrics, which Prometheus reads).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Histogram buckets for durations, in seconds: 1 ms to about a minute, each 2.5 times the last.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.5, 13))
}

type Durations<L> = Family<L, Histogram, fn() -> Histogram>;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ExecutionLabels {
    language: &'static str,
    /// `ok`, or the error's kind (`Timeout`, `GuestError`, ...).
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LanguageLabels {
    language: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolCallLabels {
    /// The configured server; empty for a name that resolved to none.
    server: String,
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerStateLabels {
    server: String,
    state: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkerLabels {
    kind: &'static str,
    state: &'static str,
}

/// Where the number of open sessions comes from.
enum Sessions {
    /// The sessions of serving over HTTP.
    Http(Arc<crate::sessions::Sessions>),
    /// A fixed number: one over stdio, none when every HTTP request stands alone.
    Fixed(i64),
}

/// The states an upstream server can be in, as the `state` label names them.
const SERVER_STATES: [&str; 4] = ["starting", "ready", "failed", "stopped"];

/// Every metric toolweave exports, and the registry that writes them.
pub struct Metrics {
    registry: Registry,
    executions: Family<ExecutionLabels, Counter>,
    execution_seconds: Durations<LanguageLabels>,
    tool_calls: Family<ToolCallLabels, Counter>,
    tool_call_seconds: Durations<ServerLabels>,
    upstream_servers: Family<ServerStateLabels, Gauge>,
    workers: Family<WorkerLabels, Gauge>,
    sessions_open: Gauge,
    rate_limited: Counter,
    sessions: OnceLock<Sessions>,
    /// One scrape at a time refreshes the gauges and writes the text.
    scrape: Mutex<()>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics(..)")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every metric, registered under the `toolweave_` prefix, at zero.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("toolweave");
        let executions = Family::<ExecutionLabels, Counter>::default();
        registry.register(
            "executions",
            "Executions that ended, by language and outcome (ok, or the error's kind)",
            executions.clone(),
        );
        let execution_seconds: Durations<LanguageLabels> =
            Family::new_with_constructor(duration_histogram);
        registry.register_with_unit(
            "execution_duration",
            "Time from an execution's request to its outcome, by language",
            Unit::Seconds,
            execution_seconds.clone(),
        );
        let tool_calls = Family::<ToolCallLabels, Counter>::default();
        registry.register(
            "tool_calls",
            "Tool calls of guest code, by upstream server and outcome (ok, error, denied)",
            tool_calls.clone(),
        );
        let tool_call_seconds: Durations<ServerLabels> =
            Family::new_with_constructor(duration_histogram);
        registry.register_with_unit(
            "tool_call_duration",
            "Time a tool call of guest code took, validation and upstream request included, by server",
            Unit::Seconds,
            tool_call_seconds.clone(),
        );
        let upstream_servers = Family::<ServerStateLabels, Gauge>::default();
        registry.register(
            "upstream_server_state",
            "1 for the state each configured upstream server is in (starting, ready, failed, stopped), 0 for the others",
            upstream_servers.clone(),
        );
        let workers = Family::<WorkerLabels, Gauge>::default();
        registry.register(
            "workers",
            "Worker processes by kind (javascript, python) and state (waiting: for any session; kept: for the next execution of the session they ran one for; busy)",
            workers.clone(),
        );
        let sessions_open = Gauge::default();
        registry.register("sessions_open", "MCP sessions open", sessions_open.clone());
        let rate_limited = Counter::default();
        registry.register(
            "rate_limit_refusals",
            "Executions refused by --rate-limit",
            rate_limited.clone(),
        );
        Self {
            registry,
            executions,
            execution_seconds,
            tool_calls,
            tool_call_seconds,
            upstream_servers,
            workers,
            sessions_open,
            rate_limited,
            sessions: OnceLock::new(),
            scrape: Mutex::new(()),
        }
    }

    /// Open sessions are those in `manager`.
    pub fn count_sessions(&self, manager: Arc<crate::sessions::Sessions>) {
        let _ = self.sessions.set(Sessions::Http(manager));
    }

    /// Open sessions are always `count` (one over stdio, none when HTTP requests stand alone).
    pub fn fixed_sessions(&self, count: i64) {
        let _ = self.sessions.set(Sessions::Fixed(count));
    }

    /// One execution ended.
    pub(crate) fn execution(&self, language: Language, outcome: &'static str, duration: Duration) {
        let language = language.name();
        self.executions
            .get_or_create(&ExecutionLabels { language, outcome })
            .inc();
        self.execution_seconds
            .get_or_create(&LanguageLabels { language })
            .observe(duration.as_secs_f64());
    }

    /// `--rate-limit` refused an execution.
    pub(crate) fn rate_limit_refusal(&self) {
        self.rate_limited.inc();
    }

    /// The metrics as Prometheus scrapes them, with the gauges read from `gateway` now.
    pub async fn render(&self, gateway: &Gateway) -> String {
        let sessions = match self.sessions.get() {
            Some(Sessions::Http(manager)) => {
                i64::try_from(manager.count().await).unwrap_or(i64::MAX)
            }
            Some(Sessions::Fixed(count)) => *count,
            None => 0,
        };
        let _scrape = self.scrape.lock().unwrap_or_else(PoisonError::into_inner);
        self.sessions_open.set(sessions);
        for status in gateway.upstream().status() {
            let current = state_name(&status.state);
            for state in SERVER_STATES {
                self.upstream_servers
                    .get_or_create(&ServerStateLabels {
                        server: status.name.clone(),
                        state,
                    })
                    .set(i64::from(state == current));
            }
        }
        for count in gateway.workers() {
            let kind = match count.kind {
                WorkerKind::JavaScript => "javascript",
                WorkerKind::Python => "python",
            };
            for (state, value) in [
                ("waiting", count.waiting),
                ("kept", count.kept),
                ("busy", count.busy),
            ] {
                self.workers
                    .get_or_create(&WorkerLabels { kind, state })
                    .set(i64::try_from(value).unwrap_or(i64::MAX));
            }
        }
        let mut text = String::new();
        if let Err(error) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            // Writing to a String fails only if a metric's encoding does; say so in the answer.
            tracing::warn!(%error, "the metrics could not be written");
            text.push_str("# toolweave: the metrics could not be written\n");
        }
        text
    }
}

impl Observer for Metrics {
    fn tool_call(&self, server: Option<&str>, outcome: CallOutcome, duration: Duration) {
        let server = server.unwrap_or_default().to_owned();
        self.tool_call_seconds
            .get_or_create(&ServerLabels {
                server: server.clone(),
            })
            .observe(duration.as_secs_f64());
        self.tool_calls
            .get_or_create(&ToolCallLabels {
                server,
                outcome: outcome.as_str(),
            })
            .inc();
    }
}

fn state_name(state: &ServerState) -> &'static str {
    match state {
        ServerState::Starting => "starting",
        ServerState::Ready { .. } => "ready",
        ServerState::Failed { .. } => "failed",
        ServerState::Stopped => "stopped",
    }
}

/// Metrics served on an address of their own (`--metrics-address`), apart from MCP: no bearer
/// token, since this address is meant for the monitoring network (it shows counts, states and
/// server names; nothing there runs code), and it works with stdio serving too.
#[derive(Debug)]
pub struct MetricsListener {
    listener: tokio::net::TcpListener,
    local_address: std::net::SocketAddr,
}

impl MetricsListener {
    /// Binds `address`.
    pub async fn bind(address: std::net::SocketAddr) -> Result<Self, crate::http_error::HttpError> {
        let bind_error = |source| crate::http_error::HttpError::Bind { address, source };
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(bind_error)?;
        let local_address = listener.local_addr().map_err(bind_error)?;
        Ok(Self {
            listener,
            local_address,
        })
    }

    /// The address actually bound.
    pub fn local_address(&self) -> std::net::SocketAddr {
        self.local_address
    }

    /// Serves `/metrics` until `stop` fires.
    pub async fn serve(
        self,
        metrics: Arc<Metrics>,
        gateway: Arc<Gateway>,
        stop: tokio_util::sync::CancellationToken,
    ) {
        use axum::response::IntoResponse;
        let router = axum::Router::new()
            .route(
                METRICS_PATH,
                axum::routing::get(move || async move {
                    (
                        [(axum::http::header::CONTENT_TYPE, CONTENT_TYPE)],
                        metrics.render(&gateway).await,
                    )
                        .into_response()
                }),
            )
            .fallback(|| async {
                (
                    axum::http::StatusCode::NOT_FOUND,
                    format!(
                        "toolweave: this address serves metrics at {} only\n",
                        METRICS_PATH
                    ),
                )
            });
        // Said whatever the log level: with port 0 this is how the caller learns the port.
        eprintln!(
            "toolweave: serving metrics at http://{}{}",
            self.local_address, METRICS_PATH
        );
        let served = axum::serve(self.listener, router)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await;
        if let Err(error) = served {
            tracing::warn!(%error, "the metrics listener ended with an error");
        }
    }
}
