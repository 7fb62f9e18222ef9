//! One execution: the engine runs on a thread or in a worker process; this side answers it.
//!
//! The engine sends events (started, host calls, log lines) and finally its outcome. Each
//! host call becomes a future polled here, so calls made together (`Promise.all`) run concurrently
//! upstream. This side also enforces what only the host may decide: the tool-call budget, the
//! client's cancellation, and a deadline backstop for an engine that stops answering.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
#[expect(
    deprecated,
    reason = "MCP logging is deprecated by SEP-2577; clients of 2025-11-25 and earlier use it"
)]
use rmcp::model::LoggingLevel;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolweave_sandbox::{
    EngineEvent, FromWorker, HostCall, HostReply, HostRequest, Language, LogStream, Outcome,
};
use toolweave_upstream::Notice;

use crate::audit::{CallRecord, ExecutionRecord, RequestLog};
use crate::bridge;
use crate::budget::Budget;
use crate::emitted::Emitted;
use crate::error::ExecutionError;
use crate::gateway::{Flavor, Gateway};
use crate::llm::LlmBudget;
use crate::session_state::SessionState;
use toolweave_config::ToolGlobs;

/// How long abandoned calls get to tell their upstream servers they were cancelled.
const CANCEL_GRACE: Duration = Duration::from_secs(2);
/// Extra time the engine gets past its own deadline before the host gives up on it.
const DEADLINE_GRACE: Duration = Duration::from_millis(1500);
/// Warnings one execution's answer carries at most (an engine sends a few; this bounds a worker
/// that misbehaves).
const MAX_WARNINGS: usize = 20;

/// How to run one program, beyond its code and language. The default: nobody listening, a
/// session named `library`, the gateway's approver, never cancelled from outside.
#[derive(Debug, Clone)]
pub struct ExecuteOptions {
    /// Where progress and log notices about its tool calls go (an MCP client's request, when
    /// there is one).
    pub listener: Option<toolweave_upstream::Listener>,
    /// Who asked, for the audit log (an MCP session, `run`).
    pub session: String,
    /// Who approves calls to tools marked destructive; without one (here or given to the
    /// builder) they are refused unless an approve rule names them.
    pub approver: Option<Arc<dyn crate::Approver>>,
    /// Stops the execution when cancelled (the client cancelled its request).
    pub cancel: CancellationToken,
    /// What the client's session keeps across its executions (the store, result handles);
    /// `None` uses the gateway's own, shared by every execution without one.
    pub state: Option<Arc<SessionState>>,
    /// The tools this execution may call (`allowedTools`, globs over `server.tool`), within what
    /// the policy allows: it can keep tools out, never let one in.
    pub allowed_tools: Option<ToolGlobs>,
    /// A deadline for this execution (`timeoutMs`); one longer than the gateway's
    /// `--timeout-ms` is cut to it, and the answer says so.
    pub timeout: Option<Duration>,
    /// Who the execution runs for, when the client said (an HTTP identity): its rules decide
    /// the calls, and the audit log names it.
    pub identity: Option<Arc<crate::Identity>>,
}

impl Default for ExecuteOptions {
    fn default() -> Self {
        Self {
            listener: None,
            session: "library".to_owned(),
            approver: None,
            cancel: CancellationToken::new(),
            state: None,
            allowed_tools: None,
            timeout: None,
            identity: None,
        }
    }
}

/// One captured console line.
#[derive(Debug, Clone, Serialize)]
pub struct LogLine {
    /// `log`, `info`, `warn`, `error` or `debug`.
    pub stream: &'static str,
    /// The formatted text.
    pub text: String,
}

/// Console lines an answer carries at most. Past them the earliest are left out and counted, so
/// a program printing many tiny lines costs the gateway, and the model reading the answer, no
/// more than this many.
pub const MAX_LOG_LINES: usize = 1000;

/// Console lines left out of an answer (the earliest ones, past [`MAX_LOG_LINES`]).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct OmittedLogs {
    /// How many lines.
    pub lines: usize,
    /// Their bytes.
    pub bytes: usize,
}

/// The console lines kept of one execution: the last [`MAX_LOG_LINES`], and a count of those
/// before them.
#[derive(Debug, Default)]
struct Console {
    lines: std::collections::VecDeque<LogLine>,
    omitted: OmittedLogs,
}

impl Console {
    fn push(&mut self, line: LogLine) {
        if self.lines.len() == MAX_LOG_LINES
            && let Some(dropped) = self.lines.pop_front()
        {
            self.omitted.lines += 1;
            self.omitted.bytes += dropped.text.len();
        }
        self.lines.push_back(line);
    }
}

/// What one execution used.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionStats {
    /// Wall-clock time from request to outcome, in milliseconds.
    pub duration_ms: f64,
    /// Upstream tool calls made.
    pub tool_calls: u32,
    /// Calls that reached an upstream server, per tool (`server.tool`).
    pub calls_by_tool: std::collections::BTreeMap<String, u32>,
    /// Bytes of tool results received from upstream servers.
    pub upstream_bytes: u64,
    /// Bytes of console output captured.
    pub log_bytes: usize,
}

/// The outcome of one execution with its logs and stats.
#[derive(Debug)]
pub struct ExecutionReport {
    /// The value of the program, or why there is none.
    pub result: Result<Value, ExecutionError>,
    /// Console output, in order: the last [`MAX_LOG_LINES`] lines.
    pub logs: Vec<LogLine>,
    /// The earlier lines left out of `logs`.
    pub logs_omitted: OmittedLogs,
    /// What the model should know about a run that its value does not say (a promise rejected
    /// with nothing awaiting it, calls still running when the program ended, a program that
    /// computed something and returned nothing), one sentence each, in order.
    pub warnings: Vec<String>,
    /// What it used.
    pub stats: ExecutionStats,
    /// Content blocks for the answer after its text (`emit(block)`, image and audio blocks the
    /// program returned), in order; kept when the execution failed after adding them.
    pub blocks: Vec<rmcp::model::ContentBlock>,
}

impl Gateway {
    /// Runs one guest program to completion, a limit, or cancellation.
    pub async fn execute(
        self: &Arc<Self>,
        code: impl Into<String>,
        language: Language,
        options: ExecuteOptions,
    ) -> ExecutionReport {
        let started = Instant::now();
        let limits = &self.limits;
        let code = code.into();
        let ExecuteOptions {
            listener,
            session: caller,
            approver,
            cancel,
            state,
            allowed_tools,
            timeout: requested_timeout,
            identity,
        } = options;
        let state =
            state.unwrap_or_else(|| self.own_state.get_or_init(|| self.session_state()).clone());
        let approver = approver.or_else(|| self.approver.clone());
        // Kept for the audit log only when there is one.
        let audited_code = self
            .audit
            .as_ref()
            .map(|_| (crate::audit::sha256_hex(&code), code.len()));
        // `llm.ask` asks the client session itself, not as an upstream server's request.
        let llm_client = listener
            .as_ref()
            .and_then(|listener| listener.client().cloned());
        // Requests upstream servers make of the client during the execution are audited too.
        let requests = RequestLog::default();
        let listener = match (listener, &self.audit) {
            (Some(listener), Some(audit)) => Some(requests.recording(listener, audit.contents())),
            (listener, _) => listener,
        };
        let flavor = Flavor::of(language);
        let catalog = self.catalog(false).await;
        let manifest = catalog.manifest();
        // What the request asked to narrow, and what it could not have.
        let mut warnings = Vec::new();
        let timeout = narrowed_timeout(requested_timeout, limits.timeout, &mut warnings);
        drop(catalog);
        let engine_request = toolweave_sandbox::ExecuteRequest {
            code,
            language,
            limits: toolweave_sandbox::EngineLimits {
                timeout,
                ..crate::engines::engine_limits(limits)
            },
            manifest,
        };

        let mut session = self.executor.start(engine_request).await;
        let llm = Arc::new(LlmBudget::new(self.llm.clone(), llm_client, timeout));

        let calls_cancel = CancellationToken::new();
        // Calls in flight, polled by this task: no task spawn or thread hop per call.
        let mut calls: FuturesUnordered<BoxFuture<'static, CallAnswer>> = FuturesUnordered::new();
        let mut call_records = Vec::new();
        let budget = Arc::new(Budget::new(
            limits.max_calls_per_tool,
            limits.max_upstream_bytes,
        ));
        let mut console = Console::default();
        let mut emitted = Emitted::new(limits);
        let mut log_bytes = 0usize;
        let mut tool_calls = 0u32;
        let mut host_error: Option<ExecutionError> = None;
        // One search or describe of this execution at a time: a program that starts a thousand
        // at once waits for its own, and other sessions' discovery does not queue behind them.
        let discovery_turn = Arc::new(tokio::sync::Semaphore::new(1));
        let backstop = tokio::time::sleep(timeout + DEADLINE_GRACE);
        tokio::pin!(backstop);

        let outcome = loop {
            tokio::select! {
                biased;
                () = cancel.cancelled(), if host_error.is_none() => {
                    session.cancel();
                    host_error = Some(ExecutionError::Cancelled);
                }
                () = &mut backstop => {
                    // The engine did not stop at its own deadline: give up on it. An engine
                    // thread sees the cancel at its next interrupt check; a worker process that
                    // does not stop is killed.
                    session.cancel();
                    break None;
                }
                message = session.next() => match message {
                    Some(FromWorker::Finished(outcome)) => break Some(outcome),
                    Some(FromWorker::Event(EngineEvent::Started)) => {}
                    Some(FromWorker::Event(EngineEvent::Log { stream, text })) => {
                        log_bytes += text.len();
                        if let Some(listener) = &listener {
                            listener.notify(Notice::CodeLog { level: log_level(stream), text: text.clone() });
                        }
                        console.push(LogLine { stream: stream_name(stream), text });
                    }
                    Some(FromWorker::Event(EngineEvent::Progress(progress))) => {
                        if let Some(listener) = &listener {
                            listener.notify(Notice::CodeProgress {
                                progress: progress.done,
                                total: progress.total,
                                message: progress.message,
                            });
                        }
                    }
                    Some(FromWorker::Event(EngineEvent::Call(HostCall { id, request: HostRequest::Emit { block } }))) => {
                        // Answered here: the blocks are the execution's, counted as they come.
                        let outcome = emitted.emit(block).map(|()| Value::Null).map_err(|error| error.to_string());
                        session.reply(HostReply::Result { id, outcome }).await;
                    }
                    Some(FromWorker::Event(EngineEvent::Warning { text })) => {
                        if warnings.len() < MAX_WARNINGS {
                            warnings.push(crate::error::cut(text, crate::error::MAX_ERROR_TEXT));
                        }
                    }
                    Some(FromWorker::Event(EngineEvent::Call(call))) => {
                        if call.request.reaches_server() {
                            if tool_calls >= limits.max_tool_calls {
                                if host_error.is_none() {
                                    host_error = Some(ExecutionError::ToolCallLimit {
                                        limit: limits.max_tool_calls,
                                    });
                                }
                                session.cancel();
                                continue;
                            }
                            tool_calls += 1;
                        }
                        let gateway = self.clone();
                        let token = calls_cancel.child_token();
                        let listener = listener.clone();
                        let budget = budget.clone();
                        let approver = approver.clone();
                        let discovery_turn = discovery_turn.clone();
                        let state = state.clone();
                        let allowed_tools = allowed_tools.clone();
                        let identity = identity.clone();
                        let llm = llm.clone();
                        calls.push(Box::pin(async move {
                            let _turn = match call.request {
                                HostRequest::Tool { .. }
                                | HostRequest::Server { .. }
                                | HostRequest::Session(_)
                                | HostRequest::Emit { .. }
                                | HostRequest::Llm(_) => None,
                                HostRequest::Search { .. } | HostRequest::Describe { .. } => {
                                    discovery_turn.acquire_owned().await.ok()
                                }
                            };
                            let scope = bridge::Scope {
                                listener: listener.as_ref(),
                                budget: &budget,
                                approver: approver.as_ref(),
                                approval: std::sync::Mutex::new(None),
                                refused: std::sync::atomic::AtomicBool::new(false),
                                state: Some(&state),
                                allowed: allowed_tools.as_ref(),
                                identity: identity.as_deref(),
                                llm: Some(&llm),
                            };
                            let (answer, record) = bridge::answer_recorded(&gateway, call.request, flavor, token, &scope).await;
                            (call.id, answer, record)
                        }));
                    }
                    None => {
                        let error = session.ended_early().await;
                        break Some(Outcome { result: Err(error), stats: Default::default() });
                    }
                },
                Some((id, outcome, record)) = calls.next(), if !calls.is_empty() => {
                    call_records.extend(record);
                    if host_error.is_none()
                        && let Some(error) = budget.overdrawn()
                    {
                        host_error = Some(error);
                        session.cancel();
                        continue;
                    }
                    // The engine may have finished already; then nobody waits for this.
                    session.reply(HostReply::Result { id, outcome }).await;
                }
            }
        };
        calls_cancel.cancel();
        if !calls.is_empty() {
            // Calls still in flight see the cancellation when polled, and tell their upstream
            // servers (notifications/cancelled); that happens after the answer goes out.
            tokio::spawn(async move {
                let drained = calls.for_each(|_| async {});
                let _ = tokio::time::timeout(CANCEL_GRACE, drained).await;
            });
        }

        let result = match (host_error, outcome) {
            (Some(error), _) => Err(error),
            (None, Some(outcome)) => outcome
                .result
                .map_err(|error| ExecutionError::from_engine(error, limits.stack_bytes)),
            (None, None) => Err(ExecutionError::Timeout { limit: timeout }),
        };
        if let Some(allowed) = &allowed_tools {
            // Told after the run: servers that were starting when it began may be up now.
            let catalog = self.catalog(false).await;
            let settled = self.unavailable().is_empty();
            warnings.extend(allowed_tools_notes(&catalog, allowed, settled));
        }
        let result = match result {
            Ok(value) => emitted
                .take_returned(value)
                .map_err(ExecutionError::Block)
                .and_then(|value| self.keep_large(value, &state, language, &mut warnings)),
            Err(error) => Err(self.limit_named(error, timeout)),
        };
        let (calls_by_tool, upstream_bytes) = budget.used();
        let stats = ExecutionStats {
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            tool_calls,
            calls_by_tool,
            upstream_bytes,
            log_bytes,
        };
        if let (Some(audit), Some((code_sha256, code_bytes))) = (&self.audit, audited_code) {
            audit.record(&ExecutionRecord {
                time: crate::audit::now(),
                session: &caller,
                identity: identity.as_ref().map(|identity| identity.name()),
                language: language_name(language),
                code_sha256,
                code_bytes,
                duration_ms: crate::audit::millis(stats.duration_ms),
                outcome: if result.is_ok() { "ok" } else { "error" },
                error: result.as_ref().err().map(ExecutionError::kind),
                denied_calls: call_records
                    .iter()
                    .filter(|record| record.outcome == "denied")
                    .count(),
                tool_calls: &call_records,
                server_requests: &requests.take(),
                llm_requests: &llm.take_records(),
            });
        }
        ExecutionReport {
            result,
            logs: console.lines.into(),
            logs_omitted: console.omitted,
            warnings,
            stats,
            blocks: emitted.into_blocks(),
        }
    }
}

impl Gateway {
    /// The program's value, or when it is larger than `--max-result-bytes`, the description of
    /// the handle it is kept behind, with a warning telling the model how to read it.
    fn keep_large(
        &self,
        value: Value,
        state: &SessionState,
        language: Language,
        warnings: &mut Vec<String>,
    ) -> Result<Value, ExecutionError> {
        let bytes = crate::budget::json_len(&value);
        let limit = self.limits.max_result_bytes;
        if bytes <= limit {
            return Ok(value);
        }
        // A key to show the path with: the first whose value has pieces to read, else the first.
        let key = value.as_object().and_then(|fields| {
            fields
                .iter()
                .find(|(_, field)| field.is_array() || field.is_string())
                .or_else(|| fields.iter().next())
                .map(|(key, _)| key.clone())
        });
        if !state.has_session() || self.limits.max_handle_bytes == 0 {
            // Nothing could read a handle later: the result is refused as it always was.
            return Err(ExecutionError::ResultTooLarge { size: bytes, limit });
        }
        let kept = state
            .keep(value, bytes)
            .map_err(|_| ExecutionError::HandleTooLarge {
                size: bytes,
                limit: self.limits.max_handle_bytes,
            })?;
        warnings.push(crate::error::handle_note(
            &kept.id,
            bytes,
            limit,
            state.handle_ttl(),
            language == Language::Python,
            key.as_deref(),
        ));
        Ok(kept.value)
    }

    /// `error`, naming what set the limit it reports when that was not the gateway's flag: the
    /// handle cap for a result too large for any handle, `timeoutMs` for a narrowed deadline.
    fn limit_named(&self, error: ExecutionError, timeout: Duration) -> ExecutionError {
        match error {
            ExecutionError::ResultTooLarge { size, limit }
                if limit != self.limits.max_result_bytes =>
            {
                ExecutionError::HandleTooLarge { size, limit }
            }
            ExecutionError::Timeout { limit } if timeout < self.limits.timeout => {
                ExecutionError::RequestedTimeout { limit }
            }
            error => error,
        }
    }
}

/// The deadline of an execution that asked for `requested`: never past the gateway's `limit`,
/// with a warning when the request was cut to it.
fn narrowed_timeout(
    requested: Option<Duration>,
    limit: Duration,
    warnings: &mut Vec<String>,
) -> Duration {
    match requested {
        Some(requested) if requested > limit => {
            warnings.push(format!(
                "timeoutMs {} is longer than this gateway allows: the execution ran with its \
                 deadline of {} ms (--timeout-ms, set when it starts)",
                requested.as_millis(),
                limit.as_millis()
            ));
            limit
        }
        Some(requested) => requested,
        None => limit,
    }
}

/// What the model should know of an `allowedTools`: each glob that matches tools the policy
/// keeps from code (they stay out), and, once every server is up (`settled`), each that matches
/// no tool code can call.
fn allowed_tools_notes(
    catalog: &crate::catalog_state::CatalogState,
    allowed: &ToolGlobs,
    settled: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    for pattern in allowed.patterns() {
        let denied: Vec<String> = catalog
            .denied
            .iter()
            .filter(|denied| allowed.pattern_matches(pattern, &denied.server, &denied.tool))
            .map(|denied| format!("{}.{}", denied.server, denied.tool))
            .collect();
        let callable = catalog
            .catalog
            .entries()
            .iter()
            .any(|entry| allowed.pattern_matches(pattern, &entry.server, &entry.tool));
        if !denied.is_empty() {
            let mut listed = denied[..denied.len().min(10)].join(", ");
            if denied.len() > 10 {
                listed.push_str(&format!(" and {} more", denied.len() - 10));
            }
            notes.push(format!(
                "allowedTools \"{pattern}\" matches {listed}, which toolweave's policy keeps from \
                 code: they stayed out (allowedTools narrows what the policy allows, never widens it)"
            ));
        } else if settled && !callable {
            notes.push(format!(
                "allowedTools \"{pattern}\" matches no tool code can call, so it let nothing in"
            ));
        }
    }
    notes
}

/// The MCP log level a console line goes to the client at.
#[expect(
    deprecated,
    reason = "MCP logging is deprecated by SEP-2577; clients of 2025-11-25 and earlier use it"
)]
fn log_level(stream: LogStream) -> LoggingLevel {
    match stream {
        LogStream::Debug => LoggingLevel::Debug,
        LogStream::Log | LogStream::Info => LoggingLevel::Info,
        LogStream::Warn => LoggingLevel::Warning,
        LogStream::Error => LoggingLevel::Error,
    }
}

fn stream_name(stream: LogStream) -> &'static str {
    match stream {
        LogStream::Log => "log",
        LogStream::Info => "info",
        LogStream::Warn => "warn",
        LogStream::Error => "error",
        LogStream::Debug => "debug",
    }
}

/// A finished tool call: its id, the answer for the guest, and its audit record.
type CallAnswer = (u64, Result<Value, String>, Option<CallRecord>);

fn language_name(language: Language) -> &'static str {
    match language {
        Language::TypeScript => "typescript",
        Language::JavaScript => "javascript",
        Language::Python => "python",
    }
}
