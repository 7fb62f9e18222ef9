//! One upstream tool called by the client itself (a tool `serve` lists directly), on the path a
//! call from code takes: the bridge resolves it, asks the policy and the approver, takes it from a
//! budget of its own, validates its arguments and result, calls it with its timeout and
//! cancellation, and the audit log records it as a line of its own. With redaction, tokens in
//! its arguments are turned back into values and its result is redacted, as code's are.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use toolweave_sandbox::HostRequest;

use crate::audit::{CallRecord, RequestLog, RequestRecord};
use crate::bridge::{self, Scope};
use crate::budget::Budget;
use crate::catalog_state::Direction;
use crate::error::CallError;
use crate::gateway::Gateway;
use crate::redaction::Redacted;
use crate::session_state::SessionState;
use toolweave_catalog::Flavor;

/// A call of one upstream tool by name, from the client rather than from code.
#[derive(Debug, Clone)]
pub struct DirectCall {
    /// The server, as configured.
    pub server: String,
    /// The tool, as the server lists it.
    pub tool: String,
    /// The arguments the client sent.
    pub arguments: Map<String, Value>,
    /// Where upstream servers' progress and log notifications about the call go, and the
    /// client their requests reach.
    pub listener: Option<toolweave_upstream::Listener>,
    /// Who asked, for the audit log.
    pub session: String,
    /// Who approves the call when the tool is marked destructive.
    pub approver: Option<Arc<dyn crate::Approver>>,
    /// Who the call is made for, when the client said (an HTTP identity): its rules decide the
    /// call, and the audit log names it.
    pub identity: Option<Arc<crate::Identity>>,
    /// The client's session, whose redaction tokens the call's arguments may name and its
    /// result's values get; without one (an HTTP request without a session) the call has
    /// tokens of its own.
    pub state: Option<Arc<SessionState>>,
}

/// A direct call, as the audit log records it: a line like an execution's, naming the tool
/// called instead of the code run.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct DirectRecord<'a> {
    time: String,
    session: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    identity: Option<&'a str>,
    /// `server.tool`, as configured and listed upstream.
    direct: &'a str,
    duration_ms: f64,
    outcome: &'static str,
    tool_calls: &'a [CallRecord],
    denied_calls: usize,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    server_requests: &'a [RequestRecord],
    #[serde(skip_serializing_if = "Redacted::is_empty")]
    redacted: &'a Redacted,
}

impl Gateway {
    /// Calls one upstream tool for the client, as a call from code would go (policy, approval,
    /// budgets, validation, timeout, cancellation, audit): the server's result as it sent it, or
    /// an error result saying why the call was not made or failed (worded for the model);
    /// redacted when the gateway redacts.
    pub async fn call_direct(
        self: &Arc<Self>,
        call: DirectCall,
        cancel: CancellationToken,
    ) -> CallToolResult {
        let started = std::time::Instant::now();
        let name = format!("{}.{}", call.server, call.tool);
        let requests = RequestLog::default();
        let listener = match (call.listener, &self.audit) {
            (Some(listener), Some(audit)) => Some(requests.recording(listener, audit.contents())),
            (listener, _) => listener,
        };
        let budget = Budget::new(
            self.limits.max_calls_per_tool,
            self.limits.max_upstream_bytes,
        );
        let tokens = call
            .state
            .as_ref()
            .map_or_else(Arc::default, |state| state.tokens());
        let scope = Scope {
            listener: listener.as_ref(),
            budget: &budget,
            approver: call.approver.as_ref(),
            state: None,
            tokens: Some(&tokens),
            allowed: None,
            identity: call.identity.as_deref(),
            llm: None,
            waiting: None,
            warnings: std::sync::Mutex::default(),
        };
        // By original names, which no other tool's guest name can take over.
        let request = HostRequest::Tool {
            name: format!("mcp__{}__{}", call.server, call.tool),
            args: Value::Object(call.arguments),
            raw: true,
        };
        let (answer, mut record) =
            bridge::answer_recorded(self, request, Flavor::TypeScript, cancel, &scope).await;
        // Warnings (arguments the tool does not declare) follow the server's content in a block
        // of their own: what the server sent stays as it sent it.
        let warnings = scope.take_warnings();
        let answer = answer
            .and_then(|value| self.direct_result(&call.server, &call.tool, value))
            .map(|result| with_warnings(result, &warnings));
        let failed = answer.is_err();
        let mut result = answer.unwrap_or_else(|error| {
            CallToolResult::error(vec![ContentBlock::text(error.to_string())])
        });
        let redacted = self
            .redaction
            .as_ref()
            .map(|redaction| redaction.tool_result(&tokens, &mut result))
            .unwrap_or_default();
        if let Some(audit) = &self.audit {
            if let Some(record) = &mut record {
                record.name.clone_from(&name);
                if failed && record.outcome == "ok" {
                    record.outcome = "error";
                }
            }
            let calls: Vec<CallRecord> = record.into_iter().collect();
            audit.record(&DirectRecord {
                time: crate::audit::now(),
                session: &call.session,
                identity: call.identity.as_ref().map(|identity| identity.name()),
                direct: &name,
                duration_ms: crate::audit::millis(started.elapsed().as_secs_f64() * 1000.0),
                outcome: calls.first().map_or("error", |call| call.outcome),
                denied_calls: calls.iter().filter(|call| call.outcome == "denied").count(),
                tool_calls: &calls,
                server_requests: &requests.take(),
                redacted: &redacted,
            });
        }
        result
    }

    /// The server's answer to a direct call, its `structuredContent` checked against the tool's
    /// `outputSchema` (which the client was shown) unless it is an error.
    fn direct_result(
        &self,
        server: &str,
        tool: &str,
        value: Value,
    ) -> Result<CallToolResult, CallError> {
        let result: CallToolResult =
            serde_json::from_value(value).map_err(|error| CallError::Internal {
                message: format!("the result of {server}.{tool}: {error}"),
            })?;
        let Some(structured) = result.structured_content.as_ref() else {
            return Ok(result);
        };
        if result.is_error == Some(true) {
            return Ok(result);
        }
        let state = self.catalogs.snapshot();
        let Some(index) = state
            .catalog
            .resolve(&format!("mcp__{server}__{tool}"))
            .and_then(|entry| state.index_of(entry))
        else {
            return Ok(result);
        };
        let violations = bridge::check(&state, index, Direction::Output, structured);
        if violations.is_empty() {
            return Ok(result);
        }
        Err(CallError::ResultMismatch {
            tool: format!("{server}.{tool}"),
            violations,
        })
    }
}

/// `result` with `warnings` (arguments the tool does not declare) in a text block of their own
/// after the server's content, which stays as the server sent it.
fn with_warnings(mut result: CallToolResult, warnings: &[String]) -> CallToolResult {
    if !warnings.is_empty() {
        let lines: Vec<String> = warnings
            .iter()
            .map(|warning| format!("Warning: {warning}"))
            .collect();
        result.content.push(ContentBlock::text(lines.join("\n")));
    }
    result
}
