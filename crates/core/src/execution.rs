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
use toolweave_process::FromEngine;
use toolweave_sandbox::{
    EngineEvent, HostCall, HostReply, HostRequest, Language, LogStream, Outcome,
};
use toolweave_upstream::Notice;

use crate::audit::{CallRecord, ExecutionRecord, RequestLog};
use crate::bridge;
use crate::budget::Budget;
use crate::emitted::Emitted;
use crate::error::ExecutionError;
use crate::executor::Running;
use crate::gateway::Gateway;
use crate::llm::LlmBudget;
use crate::redaction::{Redacted, Tokens};
use crate::session_state::SessionState;
use toolweave_catalog::Flavor;
use toolweave_config::ToolGlobs;

/// How long abandoned calls get to tell their upstream servers they were cancelled.
const CANCEL_GRACE: Duration = Duration::from_secs(2);
/// Extra time the engine gets past its own deadline before the host gives up on it.
const DEADLINE_GRACE: Duration = Duration::from_millis(1500);
/// Warnings one execution's answer carries at most, then how many more there were (an engine
/// sends a few, its calls may add one each; this bounds a worker that misbehaves and a program
/// that calls a tool ten thousand times with an argument it does not declare).
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
    /// What the model should know about an execution that its value does not say (a promise rejected
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
        // What the request asked to narrow, and what it could not have.
        let mut warnings = Vec::new();
        let timeout = narrowed_timeout(requested_timeout, self.limits.timeout, &mut warnings);
        // A worker runs executions of one session, for one identity, and no other's.
        let session = state.number().map(|session| toolweave_process::SessionKey {
            session,
            identity: identity
                .as_ref()
                .map(|identity| Arc::<str>::from(identity.name())),
        });
        let running = self.start_engine(code, language, timeout, session).await;
        let calls = ExecutionCalls {
            gateway: self.clone(),
            flavor: crate::catalog_state::flavor_of(language),
            listener,
            budget: Arc::new(Budget::new(
                self.limits.max_calls_per_tool,
                self.limits.max_upstream_bytes,
            )),
            approver: approver.or_else(|| self.approver.clone()),
            // One search or describe of this execution at a time: a program that starts a
            // thousand at once waits for its own, and other sessions' discovery does not queue
            // behind them.
            discovery_turn: Arc::new(tokio::sync::Semaphore::new(1)),
            tokens: state.tokens(),
            state,
            allowed_tools,
            identity,
            llm: Arc::new(LlmBudget::new(self.llm.clone(), llm_client, timeout)),
            waiting: Arc::default(),
        };
        let mut drive = Drive::new(calls, running, &self.limits, warnings);
        let outcome = drive.until_outcome(&cancel, timeout).await;
        drive.abandon_calls();
        let result = self.settle(&mut drive, outcome, language, timeout).await;
        let mut report = drive.report(result, started);
        if let Some(redaction) = &self.redaction {
            drive.redacted.merge(redaction.answer(
                &drive.shared.tokens,
                &mut report.result,
                &mut report.warnings,
                &mut report.blocks,
            ));
        }
        if let Some((code_sha256, code_bytes)) = audited_code {
            let trail = AuditTrail {
                code_sha256,
                code_bytes,
                session: &caller,
                language,
                requests: &requests,
            };
            self.audit_execution(trail, &drive, &report.result, &report.stats);
        }
        report
    }

    /// Starts the engine on `code`, with the tools of the catalog as it is now.
    async fn start_engine(
        &self,
        code: String,
        language: Language,
        timeout: Duration,
        session: Option<toolweave_process::SessionKey>,
    ) -> Box<dyn Running> {
        let manifest = self.catalogs.current_catalog().await.manifest();
        let engine_request = toolweave_sandbox::ExecuteRequest {
            code,
            language,
            limits: toolweave_sandbox::EngineLimits {
                timeout,
                ..crate::executor::engine_limits(&self.limits)
            },
            manifest,
        };
        self.executor.start(engine_request, session).await
    }

    /// The execution's result once its program has stopped: what stopped it first, the value
    /// it returned (kept behind a handle when large), and the notes about its `allowedTools`.
    async fn settle(
        &self,
        drive: &mut Drive,
        outcome: Option<Outcome>,
        language: Language,
        timeout: Duration,
    ) -> Result<Value, ExecutionError> {
        let limits = &self.limits;
        let result = match (drive.host_error.take(), outcome) {
            (Some(error), _) => Err(error),
            (None, Some(outcome)) => outcome
                .result
                .map_err(|error| ExecutionError::from_engine(error, limits.stack_bytes)),
            (None, None) => Err(ExecutionError::Timeout { limit: timeout }),
        };
        if let Some(allowed) = &drive.shared.allowed_tools {
            // Told after the execution: servers that were starting when it began may be up now.
            let catalog = self.catalogs.current_catalog().await;
            let settled = self.unavailable().is_empty();
            for note in allowed_tools_notes(&catalog, allowed, settled) {
                drive.warn(note);
            }
        }
        match result {
            Ok(value) => drive
                .emitted
                .take_returned(value)
                .map_err(ExecutionError::Block)
                .and_then(|value| {
                    self.keep_large(value, &drive.shared.state, language, &mut drive.warnings)
                }),
            Err(error) => {
                let waiting = drive.shared.waiting.first();
                Err(self.limit_named(error, timeout, waiting))
            }
        }
    }

    /// Writes the audit log's record of one execution (called only when there is a log).
    fn audit_execution(
        &self,
        trail: AuditTrail<'_>,
        drive: &Drive,
        result: &Result<Value, ExecutionError>,
        stats: &ExecutionStats,
    ) {
        let Some(audit) = &self.audit else {
            return;
        };
        audit.record(&ExecutionRecord {
            time: crate::audit::now(),
            session: trail.session,
            identity: drive
                .shared
                .identity
                .as_ref()
                .map(|identity| identity.name()),
            language: trail.language.name(),
            code_sha256: trail.code_sha256,
            code_bytes: trail.code_bytes,
            duration_ms: crate::audit::millis(stats.duration_ms),
            outcome: if result.is_ok() { "ok" } else { "error" },
            error: result.as_ref().err().map(ExecutionError::kind),
            denied_calls: drive
                .call_records
                .iter()
                .filter(|record| record.outcome == "denied")
                .count(),
            tool_calls: &drive.call_records,
            server_requests: &trail.requests.take(),
            llm_requests: &drive.shared.llm.take_records(),
            redacted: &drive.redacted,
        });
    }
}

/// What the audit log records of an execution besides what its drive counted.
struct AuditTrail<'a> {
    code_sha256: String,
    code_bytes: usize,
    /// Who asked (an MCP session, `run`).
    session: &'a str,
    language: Language,
    /// Requests upstream servers made of the client during the execution.
    requests: &'a RequestLog,
}

/// What every host call of one execution answers to, cloned into each call's future.
#[derive(Clone)]
struct ExecutionCalls {
    gateway: Arc<Gateway>,
    flavor: Flavor,
    listener: Option<toolweave_upstream::Listener>,
    budget: Arc<Budget>,
    approver: Option<Arc<dyn crate::Approver>>,
    discovery_turn: Arc<tokio::sync::Semaphore>,
    state: Arc<SessionState>,
    /// The tokens redaction gives this execution's values: its session's, or its own when it
    /// has no session.
    tokens: Arc<Tokens>,
    allowed_tools: Option<ToolGlobs>,
    identity: Option<Arc<crate::Identity>>,
    llm: Arc<LlmBudget>,
    waiting: Arc<crate::approval::Waiting>,
}

impl ExecutionCalls {
    /// The future that answers `call`, polled by the execution's own task.
    fn answer(self, call: HostCall, token: CancellationToken) -> BoxFuture<'static, CallAnswer> {
        Box::pin(async move {
            let _turn = match call.request {
                HostRequest::Tool { .. }
                | HostRequest::Server { .. }
                | HostRequest::Session(_)
                | HostRequest::Emit { .. }
                | HostRequest::Llm(_) => None,
                HostRequest::Search { .. } | HostRequest::Describe { .. } => {
                    self.discovery_turn.clone().acquire_owned().await.ok()
                }
            };
            let scope = bridge::Scope {
                listener: self.listener.as_ref(),
                budget: &self.budget,
                approver: self.approver.as_ref(),
                state: Some(&self.state),
                tokens: Some(&self.tokens),
                allowed: self.allowed_tools.as_ref(),
                identity: self.identity.as_deref(),
                llm: Some(&self.llm),
                waiting: Some(&self.waiting),
                warnings: std::sync::Mutex::default(),
            };
            let (answer, record) =
                bridge::answer_recorded(&self.gateway, call.request, self.flavor, token, &scope)
                    .await;
            let memory_limit = self.gateway.limits.memory_bytes;
            let answer = answer.map_err(|error| error.guest_text(memory_limit));
            (call.id, answer, record, scope.take_warnings())
        })
    }
}

/// One execution driven to its end: the engine, the calls in flight, and what it counted.
struct Drive {
    /// What every call answers to.
    shared: ExecutionCalls,
    running: Box<dyn Running>,
    /// Calls in flight, polled by the execution's task: no task spawn or thread hop per call.
    calls: FuturesUnordered<BoxFuture<'static, CallAnswer>>,
    calls_cancel: CancellationToken,
    call_records: Vec<CallRecord>,
    console: Console,
    emitted: Emitted,
    warnings: Vec<String>,
    /// Warnings left out of `warnings`, which holds [`MAX_WARNINGS`].
    warnings_omitted: usize,
    log_bytes: usize,
    /// What redaction replaced in what the model reads, by detector.
    redacted: Redacted,
    tool_calls: u32,
    max_tool_calls: u32,
    /// What the host stopped the execution for (cancellation, a limit), first one wins.
    host_error: Option<ExecutionError>,
}

impl Drive {
    fn new(
        shared: ExecutionCalls,
        running: Box<dyn Running>,
        limits: &toolweave_config::Limits,
        warnings: Vec<String>,
    ) -> Self {
        Self {
            shared,
            running,
            calls: FuturesUnordered::new(),
            calls_cancel: CancellationToken::new(),
            call_records: Vec::new(),
            console: Console::default(),
            emitted: Emitted::new(limits),
            warnings,
            warnings_omitted: 0,
            log_bytes: 0,
            redacted: Redacted::default(),
            tool_calls: 0,
            max_tool_calls: limits.max_tool_calls,
            host_error: None,
        }
    }

    /// Answers the engine until it finishes, and returns its outcome; `None` when it did not
    /// stop at its own deadline (`timeout`) and the host gave up on it.
    async fn until_outcome(
        &mut self,
        cancel: &CancellationToken,
        timeout: Duration,
    ) -> Option<Outcome> {
        let backstop = tokio::time::sleep(timeout + DEADLINE_GRACE);
        tokio::pin!(backstop);
        loop {
            tokio::select! {
                biased;
                () = cancel.cancelled(), if self.host_error.is_none() => {
                    self.running.cancel();
                    self.host_error = Some(ExecutionError::Cancelled);
                }
                () = &mut backstop => {
                    // The engine did not stop at its own deadline: give up on it. An engine
                    // thread sees the cancel at its next interrupt check; a worker process that
                    // does not stop is killed.
                    self.running.cancel();
                    return None;
                }
                message = self.running.next() => {
                    if let Some(outcome) = self.on_message(message).await {
                        return Some(outcome);
                    }
                }
                Some(answer) = self.calls.next(), if !self.calls.is_empty() => {
                    self.on_answer(answer).await;
                }
            }
        }
    }

    /// Handles one message of the engine; the outcome when it was the last.
    async fn on_message(&mut self, message: Option<FromEngine>) -> Option<Outcome> {
        match message {
            Some(FromEngine::Finished(outcome)) => return Some(outcome),
            Some(FromEngine::Event(EngineEvent::Started)) => {}
            Some(FromEngine::Event(EngineEvent::Log { stream, text })) => self.log(stream, text),
            Some(FromEngine::Event(EngineEvent::Progress(mut progress))) => {
                if let Some(message) = &mut progress.message {
                    self.redact(message);
                }
                if let Some(listener) = &self.shared.listener {
                    listener.notify(Notice::CodeProgress {
                        progress: progress.done,
                        total: progress.total,
                        message: progress.message,
                    });
                }
            }
            Some(FromEngine::Event(EngineEvent::Call(HostCall {
                id,
                request: HostRequest::Emit { block },
            }))) => {
                // Answered here: the blocks are the execution's, counted as they come.
                let outcome = self
                    .emitted
                    .emit(block)
                    .map(|()| Value::Null)
                    .map_err(|error| error.to_string());
                self.running.reply(HostReply::Result { id, outcome }).await;
            }
            Some(FromEngine::Event(EngineEvent::Warning { text })) => self.warn(text),
            Some(FromEngine::Event(EngineEvent::Call(call))) => self.start_call(call),
            None => {
                let error = self.running.ended_early().await;
                return Some(Outcome {
                    result: Err(error),
                    stats: Default::default(),
                });
            }
        }
        None
    }

    /// Adds a warning to the execution's answer (the engine's, or one its calls added), cut to
    /// [`crate::error::MAX_ERROR_TEXT`]: the same one once, and at most [`MAX_WARNINGS`], then
    /// how many more there were.
    fn warn(&mut self, text: String) {
        let text = crate::error::cut(text, crate::error::MAX_ERROR_TEXT);
        if self.warnings.contains(&text) {
            return;
        }
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(text);
        } else {
            self.warnings_omitted += 1;
        }
    }

    /// The warnings of the execution's answer, with how many more there were.
    fn take_warnings(&mut self) -> Vec<String> {
        let mut warnings = std::mem::take(&mut self.warnings);
        if self.warnings_omitted > 0 {
            warnings.push(format!(
                "… and {} more warnings",
                std::mem::take(&mut self.warnings_omitted)
            ));
        }
        warnings
    }

    /// The execution's answer: its result, console lines, warnings, what it used (since
    /// `started`) and the blocks it emitted, taken out of the drive.
    fn report(
        &mut self,
        result: Result<Value, ExecutionError>,
        started: Instant,
    ) -> ExecutionReport {
        let (calls_by_tool, upstream_bytes) = self.shared.budget.used();
        let stats = ExecutionStats {
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            tool_calls: self.tool_calls,
            calls_by_tool,
            upstream_bytes,
            log_bytes: self.log_bytes,
        };
        ExecutionReport {
            result,
            logs: std::mem::take(&mut self.console.lines).into(),
            logs_omitted: self.console.omitted,
            warnings: self.take_warnings(),
            stats,
            blocks: self.emitted.take_blocks(),
        }
    }

    /// Replaces what redaction finds in `text`, a console line or progress message of the code,
    /// by its tokens (when the gateway redacts).
    fn redact(&mut self, text: &mut String) {
        if let Some(redaction) = &self.shared.gateway.redaction {
            redaction.text(Some(&self.shared.tokens), text, &mut self.redacted);
        }
    }

    /// Keeps one console line and tells the client about it.
    fn log(&mut self, stream: LogStream, mut text: String) {
        self.log_bytes += text.len();
        self.redact(&mut text);
        if let Some(listener) = &self.shared.listener {
            listener.notify(Notice::CodeLog {
                level: log_level(stream),
                text: text.clone(),
            });
        }
        self.console.push(LogLine {
            stream: stream_name(stream),
            text,
        });
    }

    /// Starts answering one host call, or stops the execution when it is one tool call too many.
    fn start_call(&mut self, call: HostCall) {
        if call.request.reaches_server() {
            if self.tool_calls >= self.max_tool_calls {
                if self.host_error.is_none() {
                    self.host_error = Some(ExecutionError::ToolCallLimit {
                        limit: self.max_tool_calls,
                    });
                }
                self.running.cancel();
                return;
            }
            self.tool_calls += 1;
        }
        let token = self.calls_cancel.child_token();
        self.calls.push(self.shared.clone().answer(call, token));
    }

    /// Replies to the guest with a finished call, unless it overdrew the execution's budget.
    async fn on_answer(&mut self, (id, outcome, record, warnings): CallAnswer) {
        self.call_records.extend(record);
        for warning in warnings {
            self.warn(warning);
        }
        if self.host_error.is_none()
            && let Some(error) = self.shared.budget.overdrawn()
        {
            self.host_error = Some(error);
            self.running.cancel();
            return;
        }
        // The engine may have finished already; then nobody waits for this.
        self.running.reply(HostReply::Result { id, outcome }).await;
    }

    /// Cancels the calls still in flight once the program has stopped.
    fn abandon_calls(&mut self) {
        self.calls_cancel.cancel();
        if !self.calls.is_empty() {
            // Calls still in flight see the cancellation when polled, and tell their upstream
            // servers (notifications/cancelled); that happens after the answer goes out.
            let calls = std::mem::take(&mut self.calls);
            tokio::spawn(async move {
                let drained = calls.for_each(|_| async {});
                let _ = tokio::time::timeout(CANCEL_GRACE, drained).await;
            });
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
        let bytes = crate::json_size::value_json_len(&value);
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
    fn limit_named(
        &self,
        error: ExecutionError,
        timeout: Duration,
        waiting: Option<String>,
    ) -> ExecutionError {
        match (error, waiting) {
            (ExecutionError::ResultTooLarge { size, limit }, _)
                if limit != self.limits.max_result_bytes =>
            {
                ExecutionError::HandleTooLarge { size, limit }
            }
            (
                ExecutionError::Timeout { limit } | ExecutionError::RequestedTimeout { limit },
                Some(tool),
            ) => ExecutionError::TimeoutWaitingForApproval {
                limit,
                tool,
                requested: timeout < self.limits.timeout,
            },
            (ExecutionError::Timeout { limit }, None) if timeout < self.limits.timeout => {
                ExecutionError::RequestedTimeout { limit }
            }
            (error, _) => error,
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
            .filter(|denied| allowed.pattern_matches(pattern, &denied.name()))
            .map(|denied| format!("{}.{}", denied.server, denied.tool))
            .collect();
        let callable = catalog.catalog.entries().iter().any(|entry| {
            allowed.pattern_matches(pattern, &crate::catalog_state::entry_name(entry))
        });
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

/// A finished tool call: its id, the answer for the guest, its audit record, and the warnings it
/// added to the execution's answer.
type CallAnswer = (u64, Result<Value, String>, Option<CallRecord>, Vec<String>);
