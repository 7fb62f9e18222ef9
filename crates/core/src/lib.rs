//! One execution end to end, and the catalog the model searches.
//!
//! [`Gateway`] owns the upstream manager and the current catalog. An execution ([`Gateway::execute`])
//! runs guest code on an engine thread; every tool call the guest makes arrives here as a message,
//! goes through the [`bridge`] (resolve, budget, validate, call, convert) and is answered with a
//! message. Guest code never holds anything but names and JSON.

mod approval;
mod audit;
mod bridge;
mod budget;
mod catalog_state;
mod direct;
mod engines;
mod error;
mod executor;
#[cfg(target_os = "linux")]
mod forks;
mod gateway;
mod observe;
mod render;
mod workers;

pub use approval::{Approval, ApprovalRequest, Approver};
pub use audit::{AuditLog, AuditOptions, CallRecord, RequestRecord};
pub use direct::DirectCall;
pub use engines::{Engines, Isolation};
pub use error::{DiscoveryError, ExecutionError};
pub use executor::{
    ExecuteRequest, ExecutionReport, ExecutionStats, LogLine, MAX_LOG_LINES, OmittedLogs,
};
pub use gateway::{
    DISCOVERY_WAIT, DescribeAnswer, Described, Flavor, Gateway, MAX_DESCRIBE_NAMES,
    MAX_QUERY_BYTES, SearchAnswer, SearchResult, ServerInstructions, Unavailable,
};
pub use observe::{CallOutcome, Observer, SPAN_TARGET, WorkerCount};
pub use render::{describe_text, execution_text, search_text};
pub use tokio_util::sync::CancellationToken;
pub use toolweave_sandbox::confine;
#[cfg(target_os = "linux")]
pub use toolweave_sandbox::zygote;
pub use toolweave_sandbox::{
    Language, LogStream, WorkerCommand, WorkerKind, WorkerSpec, worker_main,
};
pub use toolweave_upstream::{
    ClientConnection, ClientSession, ClientSessions, ForwardedAnswer, ForwardedRequest, Listener,
    Notice, Refusal, RequestKind, ServerState,
};
