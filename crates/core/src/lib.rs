//! toolweave's core: code mode over tools, as a library.
//!
//! A [`Gateway`] runs guest programs (TypeScript, JavaScript, Python) that call tools as async
//! functions, `await tools.<namespace>.<tool>(arguments)`. Tools come from [`ToolProvider`]s: MCP
//! servers ([`McpProvider`], one per configured server) and functions of the host program
//! ([`ClosureProvider`]). Guest code holds nothing but names and JSON: every call it makes arrives
//! at the host as a message and goes through the bridge, which resolves the name, validates the
//! arguments against the tool's schema, applies the policy, approval and the execution's
//! budgets, calls the provider, checks and converts the result, and records it in the audit log;
//! the same for every provider. Search, descriptions and TypeScript declarations or Python stubs
//! cover every provider's tools alike.
//!
//! ```
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use serde_json::{Value, json};
//! use toolweave_core::{ClosureProvider, ExecuteOptions, Gateway, Language};
//!
//! let math = ClosureProvider::new("math").tool(
//!     "multiply",
//!     "Multiplies two numbers.",
//!     json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
//!     |arguments: Value, _context| async move {
//!         Ok::<_, String>(json!(arguments["a"].as_f64().unwrap_or(0.0) * arguments["b"].as_f64().unwrap_or(0.0)))
//!     },
//! );
//! let gateway = Gateway::builder().provider(math).build()?;
//! let report = gateway
//!     .execute("await tools.math.multiply({ a: 6, b: 7 })", Language::TypeScript, ExecuteOptions::default())
//!     .await;
//! assert_eq!(report.result?, json!(42));
//! # Ok(())
//! # }
//! ```
//!
//! Guest code runs on engine threads of this process ([`Isolation::InProcess`]) or in confined
//! worker processes ([`Isolation::Worker`]); a worker is this same program re-entered, so its
//! `main` begins with [`run_worker_if_asked`] (see `examples/embed.rs`).

#![cfg_attr(
    test,
    allow(
        clippy::too_many_lines,
        reason = "a test reads top to bottom as one scenario"
    )
)]
#![warn(missing_docs)]

mod approval;
mod audit;
mod bridge;
mod budget;
mod builder;
mod catalog_cache;
mod catalog_state;
mod closures;
mod direct;
mod discovery;
mod emitted;
mod engines;
mod error;
mod execution;
mod executor;
mod gateway;
mod identity;
mod json_size;
mod llm;
mod mcp;
mod observe;
mod pins;
mod provider;
pub mod redaction;
mod render;
mod runner;
mod session_state;
mod text_result;
mod unmatched_rules;
pub use unmatched_rules::unmatched_rules_among;

pub use approval::{
    AllowReason, AnsweredVia, Approval, ApprovalRequest, ApprovalScope, Approver, AskReason, Tier,
};
pub use audit::{AuditLog, AuditOptions, CallRecord, LlmRecord, RequestRecord};
pub use builder::GatewayBuilder;
pub use catalog_cache::{DISCOVERY_WAIT, Unavailable};
pub use catalog_state::{entry_name, flavor_of};
pub use closures::{ClosureProvider, ToolError};
pub use direct::DirectCall;
pub use discovery::{
    DescribeAnswer, Described, MAX_DESCRIBE_NAMES, MAX_QUERY_BYTES, SearchAnswer, SearchResult,
    ServerInstructions,
};
pub use engines::{Engines, Isolation};
pub use error::{
    BlockError, BuildError, CallError, DiscoveryError, ExecutionError, LlmError, NamedServer,
    ProviderError, SessionHandleError, SessionStateError, cut,
};
pub use execution::{
    ExecuteOptions, ExecutionReport, ExecutionStats, LogLine, MAX_LOG_LINES, OmittedLogs,
};
pub use executor::{Executor, Running, failed};
pub use gateway::Gateway;
pub use identity::Identity;
pub use llm::{DEFAULT_MAX_TOKENS, LlmOptions};
pub use mcp::McpProvider;
pub use observe::{CallOutcome, Observer, SPAN_TARGET, WorkerCount};
pub use pins::{HeldTool, held_among, pinned_form};
pub use provider::{CallContext, ProviderState, ToolProvider};
pub use render::{describe_text, execution_text, search_text};
pub use rmcp::model::{CallToolResult, Tool, ToolAnnotations};
pub use runner::{RemoteRunner, Runner, RunnerService};
pub use session_state::{RemoteHandles, SessionState, StateChanges};
pub use text_result::TEXT_RESULT_RULE;
pub use tokio_util::sync::CancellationToken;
pub use toolweave_catalog::{
    Annotations, Flavor, MAX_SCHEMA_DEPTH, SchemaTooDeep, ToolDefinition, ToolSchema,
};
pub use toolweave_config::{self as config, Config, Limits, Policy, ToolGlobs, ToolName};
pub use toolweave_process::confine;
pub use toolweave_process::{
    CONFINEMENT_CHECK_ARGUMENT, FromEngine, PROTOCOL_VERSION, WORKER_ARGUMENT, WorkerCommand,
    WorkerKind, run_worker_if_asked, worker_command,
};
pub use toolweave_sandbox::limit_malloc_arenas;
pub use toolweave_sandbox::{
    EngineError, EngineEvent, ExecuteRequest, HostReply, Language, LogStream, Manifest, Outcome,
};
pub use toolweave_upstream::{
    Capability, ClientConnection, ClientSession, ClientSessions, ForwardedAnswer, ForwardedRequest,
    Listener, Notice, Refusal, RequestKind, ServerState, TraceContext, UpstreamManager, definition,
};

/// The global allocator a program that starts worker processes declares
/// (`#[global_allocator] static ALLOCATOR: toolweave_core::WorkerAllocator =
/// toolweave_core::WorkerAllocator;`): in a worker it holds the guest's memory limit, and
/// elsewhere it only counts.
pub use toolweave_process::WorkerAllocator;
