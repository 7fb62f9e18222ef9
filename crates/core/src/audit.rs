//! The audit log: one JSON line per execution, written by a thread of its own so an execution
//! never waits on the disk, rotated by size, and flushed on a clean shutdown.
//!
//! A line holds when, which session, the language, the SHA-256 and length of the code, each tool
//! call (name, duration, outcome, argument and result sizes), policy refusals, each request an
//! upstream server made of the client during the execution (kind, server, duration, outcome),
//! each `llm.ask` and `llm.think` (hashes and sizes of prompt and answer, model, tokens), the
//! outcome (and the limit, when one ended it) and the duration, and, when the gateway redacts,
//! how many values each detector replaced in what the model read and how many tokens a call's
//! arguments had turned back (counts only: contents are written with `<email>` in place of each
//! value). Arguments, results, what a
//! request asked and was answered, and the LLM's prompts and answers are written only when asked
//! for (`auditLogContents`).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::redaction::Redacted;
use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;
use toolweave_upstream::{ClientSession, ForwardedAnswer, ForwardedRequest, Listener, Refusal};

/// Rotated files kept beside the current one (`audit.jsonl.1` … `.3`).
const KEPT_FILES: u32 = 3;
/// How long a flush at shutdown waits for the writer.
const FLUSH_LIMIT: Duration = Duration::from_secs(5);

/// Where and how to write the audit log.
#[derive(Debug, Clone)]
pub struct AuditOptions {
    /// The file lines are appended to.
    pub path: PathBuf,
    /// Size past which the file is rotated.
    pub max_bytes: u64,
    /// Whether tool arguments and results are written too.
    pub contents: bool,
}

/// A handle to the writer thread. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AuditLog {
    sender: Arc<Mutex<Option<mpsc::Sender<Message>>>>,
    contents: bool,
}

enum Message {
    Line(String),
    Flush(mpsc::Sender<()>),
}

/// Milliseconds, rounded to microseconds for the log.
pub(crate) fn millis(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

/// `value` as the audit log may hold it: what `redaction` finds replaced by `<email>` and the
/// like (no token: the log never holds a value or anything that leads to one).
pub(crate) fn without_redacted(
    redaction: Option<&crate::redaction::Redaction>,
    mut value: Value,
) -> Value {
    if let Some(redaction) = redaction {
        redaction.value(None, &mut value, &mut Redacted::default());
    }
    value
}

/// One tool call as the audit log records it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRecord {
    /// The name the code called.
    pub name: String,
    /// The tool that name means, as its server names it (`server.tool`), whichever of its names
    /// the code called it by (`everything.get_sum`, `mcp__everything__get-sum`): every call of
    /// one tool is found under one name. Absent when the name means no tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// From request to answer, in milliseconds.
    pub duration_ms: f64,
    /// `ok`, `error` or `denied` (refused by the policy, or not approved).
    pub outcome: &'static str,
    /// For a tool in the ask tier: `pre-approved` (an approve rule matches it), `approved` (the
    /// person asked said yes), `approved-before` (an earlier answer covers this call, see
    /// `approvalScope`), `declined`, `unanswered` (nobody answered in time), or `unavailable`
    /// (nobody could be asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<&'static str>,
    /// For an approved call: what the answer covers, `call`, `execution`, `session` or
    /// `matching`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_scope: Option<&'static str>,
    /// For a `matching` approval: the argument keys later calls match on (empty: all of them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_matching: Option<Vec<String>>,
    /// Where the person answered: `elicitation`, `page` or `terminal`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_via: Option<&'static str>,
    /// Bytes of the arguments, as JSON.
    pub argument_bytes: usize,
    /// Bytes of the result, as JSON (0 when it failed).
    pub result_bytes: usize,
    /// The tokens of redaction the arguments held, turned back into their values for the call,
    /// by detector.
    #[serde(skip_serializing_if = "Redacted::is_empty")]
    pub restored: Redacted,
    /// The arguments, when contents are logged (what redaction finds in them replaced by
    /// `<email>` and the like, when the gateway redacts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// The result, when contents are logged (redacted as the arguments are).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

/// One request an upstream server made of the client while the execution's calls were in
/// flight, as the audit log records it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestRecord {
    /// The server that asked.
    pub server: String,
    /// `elicitation`, `sampling` or `roots`.
    pub kind: &'static str,
    /// From request to answer, in milliseconds.
    pub duration_ms: f64,
    /// `accept`, `decline` or `cancel` (what the person did with an elicitation), `ok` (a
    /// sampling or roots answer), `refused` (not passed on: the client lacks the capability),
    /// `abandoned` (the calls it was for ended first) or `error`.
    pub outcome: &'static str,
    /// What the server asked, when contents are logged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<Value>,
    /// What the client answered, when contents are logged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<Value>,
}

/// The requests of one execution's servers, recorded as they are answered.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestLog {
    records: Arc<Mutex<Vec<RequestRecord>>>,
}

impl RequestLog {
    /// `listener`, whose client session (when it has one) records each request here; with
    /// `contents`, what was asked and answered too.
    pub(crate) fn recording(&self, listener: Listener, contents: bool) -> Listener {
        let Some(client) = listener.client().cloned() else {
            return listener;
        };
        listener.with_client(Arc::new(RecordedClient {
            inner: client,
            log: self.clone(),
            contents,
        }))
    }

    /// The records so far, in the order they were answered.
    pub(crate) fn take(&self) -> Vec<RequestRecord> {
        std::mem::take(&mut *self.records.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// A client session whose requests are recorded in an execution's [`RequestLog`].
#[derive(Debug)]
struct RecordedClient {
    inner: Arc<dyn ClientSession>,
    log: RequestLog,
    contents: bool,
}

impl ClientSession for RecordedClient {
    fn session(&self) -> u64 {
        self.inner.session()
    }

    fn ask(
        &self,
        server: &str,
        request: ForwardedRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<ForwardedAnswer, Refusal>> {
        let kind = request.kind().name();
        let asked = self.contents.then(|| asked_value(&request));
        let answering = self.inner.ask(server, request, cancel);
        let log = self.log.clone();
        let server = server.to_owned();
        let contents = self.contents;
        Box::pin(async move {
            let started = std::time::Instant::now();
            let answer = answering.await;
            let (outcome, answered) = match &answer {
                Ok(answer) => (
                    answer_outcome(answer),
                    contents.then(|| answer_value(answer)),
                ),
                Err(refusal) => (refusal.outcome(), None),
            };
            log.records
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(RequestRecord {
                    server,
                    kind,
                    duration_ms: millis(started.elapsed().as_secs_f64() * 1000.0),
                    outcome,
                    request: asked,
                    answer: answered.flatten(),
                });
            answer
        })
    }
}

/// An answer's outcome: the person's action for an elicitation, `ok` otherwise.
fn answer_outcome(answer: &ForwardedAnswer) -> &'static str {
    use rmcp::model::ElicitationAction;
    match answer {
        ForwardedAnswer::Elicitation(result) => match result.action {
            ElicitationAction::Accept => "accept",
            ElicitationAction::Decline => "decline",
            ElicitationAction::Cancel => "cancel",
            // A later protocol's action: the answer came, whatever it says.
            _ => "ok",
        },
        ForwardedAnswer::Sampling(_) | ForwardedAnswer::Roots(_) => "ok",
    }
}

/// What a request asked, as JSON (its params).
fn asked_value(request: &ForwardedRequest) -> Value {
    let value = match request {
        ForwardedRequest::Elicitation(params) => serde_json::to_value(params),
        ForwardedRequest::Sampling(params) => serde_json::to_value(params),
        ForwardedRequest::Roots => Ok(Value::Null),
    };
    value.unwrap_or(Value::Null)
}

/// What the client answered, as JSON.
fn answer_value(answer: &ForwardedAnswer) -> Option<Value> {
    match answer {
        ForwardedAnswer::Elicitation(result) => serde_json::to_value(result).ok(),
        ForwardedAnswer::Sampling(result) => serde_json::to_value(result).ok(),
        ForwardedAnswer::Roots(result) => serde_json::to_value(result).ok(),
    }
}

/// One execution, as the audit log records it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecutionRecord<'a> {
    pub(crate) time: String,
    pub(crate) session: &'a str,
    /// The identity the execution ran for (an HTTP client's token), when it said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) identity: Option<&'a str>,
    pub(crate) language: &'a str,
    pub(crate) code_sha256: String,
    pub(crate) code_bytes: usize,
    pub(crate) duration_ms: f64,
    pub(crate) outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<&'static str>,
    pub(crate) tool_calls: &'a [CallRecord],
    pub(crate) denied_calls: usize,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(crate) server_requests: &'a [RequestRecord],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(crate) llm_requests: &'a [LlmRecord],
    /// What redaction replaced in what the model read, by detector (counts, never values).
    #[serde(skip_serializing_if = "Redacted::is_empty")]
    pub(crate) redacted: &'a Redacted,
}

/// One `llm.ask` or `llm.think` as the audit log records it. The prompt is the system prompt
/// and the messages, as the JSON `{"system", "messages"}`; the answer is the answer's text.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmRecord {
    /// `llm.ask` or `llm.think`.
    pub function: &'static str,
    /// `sampling` (the client's model), `anthropic` or `openai` (the settings' provider), or
    /// `none` (refused before it was sent).
    pub via: &'static str,
    /// `ok`, `refused` (a budget or the allowed system prompts), `error`, `timeout` or
    /// `cancelled`.
    pub outcome: &'static str,
    /// From request to answer, in milliseconds.
    pub duration_ms: f64,
    /// The model that answered, as its answer names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The most tokens the answer could take, as counted against `--max-llm-tokens`.
    pub max_tokens: u32,
    /// Tokens of the prompt and of the answer, when the provider says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Tokens of the answer, when the provider says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// SHA-256 of the prompt.
    pub prompt_sha256: String,
    /// Bytes of the prompt.
    pub prompt_bytes: usize,
    /// SHA-256 of the answer's text, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer_sha256: Option<String>,
    /// Bytes of the answer's text.
    pub answer_bytes: usize,
    /// The prompt, when contents are logged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<Value>,
    /// The answer's text, when contents are logged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

impl AuditLog {
    /// Opens (creating) the file and starts the writer thread. `Err` says why the file cannot
    /// be written.
    pub fn open(options: AuditOptions) -> Result<Self, String> {
        let file = open_append(&options.path)?;
        let (sender, receiver) = mpsc::channel();
        let contents = options.contents;
        std::thread::Builder::new()
            .name("toolweave-audit".to_owned())
            .spawn(move || write_lines(options, file, receiver))
            .map_err(|error| format!("cannot start the audit log's writer: {error}"))?;
        Ok(Self {
            sender: Arc::new(Mutex::new(Some(sender))),
            contents,
        })
    }

    /// Whether arguments and results are logged.
    pub fn contents(&self) -> bool {
        self.contents
    }

    /// Sends one line: an execution's record, or a direct call's.
    pub(crate) fn record(&self, record: &impl Serialize) {
        let line = match serde_json::to_string(record) {
            Ok(line) => line,
            Err(error) => {
                tracing::warn!(%error, "an audit record could not be written as JSON");
                return;
            }
        };
        let sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(sender) = sender.as_ref()
            && sender.send(Message::Line(line)).is_err()
        {
            tracing::warn!("the audit log's writer has stopped; a record was lost");
        }
    }

    /// Waits (a few seconds at most) until every record sent so far is on disk.
    pub fn flush(&self) {
        let (done, wait) = mpsc::channel();
        let sent = {
            let sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
            sender
                .as_ref()
                .is_some_and(|sender| sender.send(Message::Flush(done)).is_ok())
        };
        if sent && wait.recv_timeout(FLUSH_LIMIT).is_err() {
            tracing::warn!("the audit log did not finish writing within 5 s");
        }
    }
}

/// The SHA-256 of `code`, in hex.
pub(crate) fn sha256_hex(code: &str) -> String {
    Sha256::digest(code.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Now, as RFC 3339 in UTC with milliseconds.
pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn open_append(path: &Path) -> Result<File, String> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|error| {
            format!(
                "cannot open the audit log {}: {error}; check that its folder exists and is writable",
                path.display()
            )
        })
}

fn write_lines(options: AuditOptions, mut file: File, receiver: mpsc::Receiver<Message>) {
    let mut size = file.metadata().map(|meta| meta.len()).unwrap_or(0);
    for message in receiver {
        match message {
            Message::Line(mut line) => {
                line.push('\n');
                if size > 0 && size + line.len() as u64 > options.max_bytes {
                    match rotate(&options.path) {
                        Ok(fresh) => {
                            file = fresh;
                            size = 0;
                        }
                        Err(error) => tracing::warn!(%error, "the audit log could not be rotated"),
                    }
                }
                // One write per line, no buffer: a line is on its way to disk once written.
                match file.write_all(line.as_bytes()) {
                    Ok(()) => size += line.len() as u64,
                    Err(error) => {
                        tracing::warn!(%error, path = %options.path.display(), "an audit record could not be written");
                    }
                }
            }
            Message::Flush(done) => {
                let _ = file.sync_data();
                let _ = done.send(());
            }
        }
    }
    let _ = file.sync_data();
}

/// `audit.jsonl` → `audit.jsonl.1` (older ones move up, the oldest is dropped); a new file.
fn rotate(path: &Path) -> Result<File, String> {
    let numbered = |n: u32| {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    };
    for n in (1..KEPT_FILES).rev() {
        let from = numbered(n);
        if from.exists() {
            std::fs::rename(&from, numbered(n + 1)).map_err(|error| error.to_string())?;
        }
    }
    std::fs::rename(path, numbered(1)).map_err(|error| error.to_string())?;
    open_append(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record<'a>(calls: &'a [CallRecord]) -> ExecutionRecord<'a> {
        ExecutionRecord {
            time: now(),
            session: "1",
            identity: None,
            language: "typescript",
            code_sha256: sha256_hex("return 1"),
            code_bytes: 8,
            duration_ms: 0.5,
            outcome: "ok",
            error: None,
            tool_calls: calls,
            denied_calls: 0,
            server_requests: &[],
            llm_requests: &[],
            redacted: &NOTHING_REDACTED,
        }
    }

    static NOTHING_REDACTED: std::sync::LazyLock<Redacted> =
        std::sync::LazyLock::new(Redacted::default);

    #[test]
    fn lines_are_json_and_the_file_rotates_by_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(AuditOptions {
            path: path.clone(),
            max_bytes: 600,
            contents: false,
        })
        .unwrap();
        for _ in 0..10 {
            log.record(&record(&[]));
        }
        log.flush();
        let mut lines = 0;
        let files = [
            path.clone(),
            dir.path().join("audit.jsonl.1"),
            dir.path().join("audit.jsonl.2"),
            dir.path().join("audit.jsonl.3"),
        ];
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            assert!(
                text.len() <= 600,
                "{} has {} bytes",
                file.display(),
                text.len()
            );
            for line in text.lines() {
                let value: Value = serde_json::from_str(line).unwrap();
                assert_eq!(value["codeSha256"], sha256_hex("return 1"));
                assert_eq!(value["toolCalls"], serde_json::json!([]));
                lines += 1;
            }
        }
        assert!(
            !dir.path().join("audit.jsonl.4").exists(),
            "only three old files are kept"
        );
        assert!((4..10).contains(&lines), "{lines} lines kept");
    }

    #[test]
    fn the_hash_is_sha256() {
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
