//! Long calls as tasks (the MCP tasks extension, `io.modelcontextprotocol/tasks`).
//!
//! A client speaking MCP 2026-07-28 that declares the extension on its `tools/call` of
//! `execute_code` (or of a tool listed directly) gets a task handle at once (`resultType:
//! "task"`); the call runs on in a task of its own. The client polls `tasks/get`, which shows it
//! `working` (with the latest progress as `statusMessage`), `input_required` (with the questions
//! under `inputRequests`), and at last `completed` with the call's result, `failed`, or
//! `cancelled`. It answers questions with `tasks/update`, and stops the call with `tasks/cancel`.
//!
//! A task is driven through the rounds of [`crate::rounds`]: a round that ends with questions makes
//! the task `input_required`, and `tasks/update` resumes the same paused execution with the
//! answers, as a multi round-trip retry would; nothing runs again. A call that waits at the
//! approval page does not end a round: the task stays `working`, and its `statusMessage` says
//! where the person approves.
//!
//! Tasks are kept in the memory of the process that runs them, bound to the identity that started
//! them, for [`TASK_TTL`] from their start; at most [`MAX_RUNNING_PER_CALLER`] unfinished ones
//! per identity and [`MAX_KEPT`] in all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CallToolResult, CreateTaskResult, DetailedTask, GetTaskResult, InputRequests,
    InputResponses, JsonObject, Task, TaskPayload, TaskStatus,
};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::rounds::{PAUSE_TTL, PageWait, Rounds};

/// How long a task is kept from its start: its result can be read until then.
pub(crate) const TASK_TTL: Duration = Duration::from_secs(60 * 60);

/// How often a client is asked to poll.
pub(crate) const POLL_INTERVAL_MS: u64 = 500;

/// Unfinished tasks one identity may have at once.
pub(crate) const MAX_RUNNING_PER_CALLER: usize = 16;

/// Tasks kept at once, finished or not, for every identity.
pub(crate) const MAX_KEPT: usize = 1024;

/// The most of a progress message a task keeps.
const MAX_STATUS_CHARS: usize = 1000;

/// The tasks this process runs or keeps the results of.
#[derive(Default)]
pub(crate) struct Tasks {
    kept: Mutex<HashMap<String, Arc<Entry>>>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tasks { .. }")
    }
}

/// One task.
pub(crate) struct Entry {
    id: String,
    /// The identity that started it (empty for none).
    caller: String,
    started: Instant,
    created_at: String,
    now: Mutex<Now>,
    /// Cancelled by `tasks/cancel`, or when the task's time is up.
    cancel: CancellationToken,
}

/// What a task is doing now.
struct Now {
    payload: TaskPayload,
    last_updated_at: String,
    /// The latest progress of the call, as one line.
    progress: Option<String>,
    /// Calls waiting at the approval page (those whose wait is over are not shown).
    waits: Vec<PageWait>,
    /// Where `tasks/update`'s answers go, while the task waits for them.
    answers: Option<oneshot::Sender<InputResponses>>,
    /// Why it failed or was cancelled, for `statusMessage`.
    ended: Option<String>,
}

/// Where the progress of a task's call goes: its `statusMessage`.
#[derive(Clone)]
pub(crate) struct TaskProgress(Arc<Entry>);

impl std::fmt::Debug for TaskProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TaskProgress({})", self.0.id)
    }
}

impl TaskProgress {
    /// Records `text` as the task's latest progress.
    pub(crate) fn note(&self, text: &str) {
        let text: String = text.chars().take(MAX_STATUS_CHARS).collect();
        let mut now = self.0.now();
        now.progress = Some(text);
        now.last_updated_at = timestamp();
    }
}

fn timestamp() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl Entry {
    fn now(&self) -> std::sync::MutexGuard<'_, Now> {
        // The state stays whole whatever panicked while the lock was held.
        self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self, payload: TaskPayload) {
        let mut now = self.now();
        if now.payload.status().is_terminal() {
            return;
        }
        now.payload = payload;
        now.last_updated_at = timestamp();
    }

    fn end(&self, payload: TaskPayload, why: Option<String>) {
        let mut now = self.now();
        if now.payload.status().is_terminal() {
            return;
        }
        now.payload = payload;
        now.ended = why;
        now.answers = None;
        now.last_updated_at = timestamp();
    }

    fn task(&self, now: &Now) -> Task {
        let mut task = Task::new(
            self.id.clone(),
            now.payload.status(),
            self.created_at.clone(),
            now.last_updated_at.clone(),
        )
        .with_ttl_ms(u64::try_from(TASK_TTL.as_millis()).unwrap_or(u64::MAX))
        .with_poll_interval_ms(POLL_INTERVAL_MS);
        if let Some(message) = status_message(now) {
            task = task.with_status_message(message);
        }
        task
    }

    fn detailed(&self) -> DetailedTask {
        let now = self.now();
        DetailedTask::new(self.task(&now), now.payload.clone())
    }

    fn expired(&self) -> bool {
        self.started.elapsed() >= TASK_TTL
    }
}

/// What `statusMessage` says for a task in the state `now`.
fn status_message(now: &Now) -> Option<String> {
    match now.payload.status() {
        TaskStatus::Working => {
            let waits: Vec<String> = now
                .waits
                .iter()
                .filter(|wait| !wait.over.is_cancelled())
                .map(|wait| {
                    format!(
                        "a call of {} ({}) waits for a person's approval at {} (or `toolweave \
                         approve {}` on the gateway's machine)",
                        wait.tool, wait.reason, wait.url, wait.id
                    )
                })
                .collect();
            if waits.is_empty() {
                now.progress.clone()
            } else {
                Some(waits.join("; "))
            }
        }
        TaskStatus::InputRequired => Some(
            "the call waits for the answers to inputRequests: send them with tasks/update"
                .to_owned(),
        ),
        _ => now.ended.clone(),
    }
}

/// Why a task cannot be read or changed.
fn not_found(id: &str, why: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "toolweave has no task {:?} for this caller: {why}",
            toolweave_core::cut(id.to_owned(), 100)
        ),
        None,
    )
}

impl Tasks {
    fn kept(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Entry>>> {
        // The map stays whole whatever panicked while the lock was held.
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets tasks whose time is up, cancelling those still running.
    fn purge(kept: &mut HashMap<String, Arc<Entry>>) {
        kept.retain(|_, entry| {
            if entry.expired() {
                entry.cancel.cancel();
                false
            } else {
                true
            }
        });
    }

    /// A new task for `caller`, or the error saying which bound it would pass.
    pub(crate) fn create(&self, caller: &str) -> Result<Arc<Entry>, String> {
        let mut kept = self.kept();
        Self::purge(&mut kept);
        let running = kept
            .values()
            .filter(|entry| entry.caller == caller && !entry.now().payload.status().is_terminal())
            .count();
        if running >= MAX_RUNNING_PER_CALLER {
            return Err(format!(
                "toolweave runs at most {MAX_RUNNING_PER_CALLER} unfinished tasks for one caller, \
                 and this caller has {running}: wait for one to finish (tasks/get), or stop one \
                 with tasks/cancel"
            ));
        }
        if kept.len() >= MAX_KEPT {
            return Err(format!(
                "toolweave keeps at most {MAX_KEPT} tasks at once, each for {} minutes from its \
                 start, and that many are kept: try again later",
                TASK_TTL.as_secs() / 60
            ));
        }
        let now = timestamp();
        let entry = Arc::new(Entry {
            id: format!("task-{}", crate::sealed::random_id()),
            caller: caller.to_owned(),
            started: Instant::now(),
            created_at: now.clone(),
            now: Mutex::new(Now {
                payload: TaskPayload::Working,
                last_updated_at: now,
                progress: None,
                waits: Vec::new(),
                answers: None,
                ended: None,
            }),
            cancel: CancellationToken::new(),
        });
        kept.insert(entry.id.clone(), entry.clone());
        Ok(entry)
    }

    /// Whether this process keeps task `id` (with `--state`, another copy may).
    pub(crate) fn holds(&self, id: &str) -> bool {
        self.kept().contains_key(id)
    }

    /// The task `id` of `caller`, or the error saying why there is none.
    fn find(&self, id: &str, caller: &str) -> Result<Arc<Entry>, ErrorData> {
        let mut kept = self.kept();
        Self::purge(&mut kept);
        match kept.get(id) {
            Some(entry) if entry.caller == caller => Ok(entry.clone()),
            Some(_) => Err(not_found(
                id,
                "that task was started by another identity, and only it may read, answer or \
                 cancel it",
            )),
            None => Err(not_found(
                id,
                &format!(
                    "no such task is kept here: tasks are kept {} minutes from their start (or \
                     until toolweave stops), and an id is only known to the toolweave that made it; \
                     make the call again",
                    TASK_TTL.as_secs() / 60
                ),
            )),
        }
    }

    /// `tasks/get`.
    pub(crate) fn get(&self, id: &str, caller: &str) -> Result<GetTaskResult, ErrorData> {
        Ok(GetTaskResult::new(self.find(id, caller)?.detailed()))
    }

    /// `tasks/update`: the answers go to the task's paused call. Acknowledged whatever the id,
    /// as the extension asks: answers for another caller's task, an unknown one, or one that
    /// asks nothing now are ignored.
    pub(crate) fn update(&self, id: &str, caller: &str, responses: InputResponses) {
        let entry = match self.find(id, caller) {
            Ok(entry) => entry,
            Err(why) => {
                tracing::debug!(task = id, why = %why.message, "tasks/update not honoured");
                return;
            }
        };
        let answers = entry.now().answers.take();
        match answers {
            Some(answers) => {
                // The task may have been cancelled meanwhile.
                let _ = answers.send(responses);
            }
            None => tracing::debug!(task = id, "tasks/update for a task that asks nothing now"),
        }
    }

    /// `tasks/cancel`: acknowledged whatever the id, as the extension asks; only the caller's own
    /// task is cancelled.
    pub(crate) fn cancel(&self, id: &str, caller: &str) {
        match self.find(id, caller) {
            Ok(entry) => entry.cancel.cancel(),
            Err(why) => tracing::debug!(task = id, why = %why.message, "tasks/cancel not honoured"),
        }
    }
}

/// The id of `entry`.
pub(crate) fn id(entry: &Entry) -> &str {
    &entry.id
}

/// The seed state of a new task, for the `tools/call` that made it.
pub(crate) fn created(entry: &Entry) -> CallToolResponse {
    let now = entry.now();
    CallToolResponse::Task(CreateTaskResult::new(entry.task(&now)))
}

/// Where a task's calls that wait at the approval page are told: its `statusMessage`.
pub(crate) fn telling(entry: &Arc<Entry>) -> impl Fn(Vec<PageWait>) + Send + Sync + 'static {
    let entry = Arc::downgrade(entry);
    move |waits| {
        if let Some(entry) = entry.upgrade() {
            let mut now = entry.now();
            now.waits.retain(|wait| !wait.over.is_cancelled());
            now.waits.extend(waits);
            now.last_updated_at = timestamp();
        }
    }
}

/// The progress sink of `entry`, for its call's notices.
pub(crate) fn progress(entry: &Arc<Entry>) -> TaskProgress {
    TaskProgress(entry.clone())
}

/// The token that cancels `entry`'s call.
pub(crate) fn cancelled(entry: &Entry) -> CancellationToken {
    entry.cancel.clone()
}

/// Drives `entry` from its first round's answer `first` to its end: questions make it
/// `input_required` until `tasks/update` brings the answers, which resume the paused call through
/// `rounds` (as `caller` calling `tool`); its result, or its cancellation, ends it.
pub(crate) async fn drive(
    entry: Arc<Entry>,
    rounds: Arc<Rounds>,
    caller: String,
    tool: String,
    first: CallToolResponse,
) {
    let mut response = first;
    loop {
        match response {
            CallToolResponse::Complete(result) => {
                finish(&entry, result);
                return;
            }
            CallToolResponse::InputRequired(asked) => {
                let Some(state) = asked.request_state else {
                    entry.end(
                        failed_payload("the call asked for input without a state to resume it by"),
                        None,
                    );
                    return;
                };
                let (answers, answered) = oneshot::channel();
                {
                    let mut now = entry.now();
                    now.answers = Some(answers);
                }
                entry.set(TaskPayload::InputRequired {
                    input_requests: asked.input_requests.unwrap_or_else(InputRequests::new),
                });
                let responses = tokio::select! {
                    responses = answered => responses.ok(),
                    () = entry.cancel.cancelled() => None,
                    () = tokio::time::sleep(PAUSE_TTL) => None,
                };
                let Some(responses) = responses else {
                    rounds.abandon(&state, &caller, &tool);
                    if entry.cancel.is_cancelled() {
                        entry.end(
                            TaskPayload::Cancelled,
                            Some("cancelled by tasks/cancel".to_owned()),
                        );
                    } else {
                        let why = format!(
                            "no tasks/update came within {} minutes of the questions; the call \
                             was given up on",
                            PAUSE_TTL.as_secs() / 60
                        );
                        entry.end(failed_payload(&why), Some(why.clone()));
                    }
                    return;
                };
                entry.set(TaskPayload::Working);
                response = match rounds
                    .resume(&state, responses, &caller, &tool, "task", &entry.cancel)
                    .await
                {
                    Ok(response) => response,
                    Err(error) => {
                        let why = error.message.to_string();
                        entry.end(
                            TaskPayload::Failed {
                                error: error_object(&error),
                            },
                            Some(why),
                        );
                        return;
                    }
                };
            }
            _ => {
                entry.end(
                    failed_payload("the call answered with a task of its own"),
                    None,
                );
                return;
            }
        }
    }
}

/// Ends `entry` with the call's `result`: `cancelled` when `tasks/cancel` stopped it.
fn finish(entry: &Entry, result: CallToolResult) {
    if entry.cancel.is_cancelled() {
        entry.end(
            TaskPayload::Cancelled,
            Some("cancelled by tasks/cancel".to_owned()),
        );
        return;
    }
    match serde_json::to_value(&result) {
        Ok(serde_json::Value::Object(result)) => {
            entry.end(TaskPayload::Completed { result }, None);
        }
        Ok(_) | Err(_) => entry.end(
            failed_payload("the call's result could not be written as JSON"),
            None,
        ),
    }
}

fn error_object(error: &ErrorData) -> JsonObject {
    match serde_json::to_value(error) {
        Ok(serde_json::Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

fn failed_payload(message: &str) -> TaskPayload {
    TaskPayload::Failed {
        error: error_object(&ErrorData::internal_error(message.to_owned(), None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_has_a_bounded_number_of_unfinished_tasks() {
        let tasks = Tasks::default();
        let made: Vec<_> = (0..MAX_RUNNING_PER_CALLER)
            .map(|_| tasks.create("alice").unwrap())
            .collect();
        let Err(refused) = tasks.create("alice") else {
            panic!("a task past the bound was made");
        };
        assert!(
            refused.contains("at most 16 unfinished tasks for one caller"),
            "{refused}"
        );
        // Another identity's bound is its own, and a finished task no longer counts.
        tasks.create("bob").unwrap();
        made[0].end(TaskPayload::Cancelled, None);
        tasks.create("alice").unwrap();
    }

    #[test]
    fn a_task_is_read_by_the_identity_that_started_it_only() {
        let tasks = Tasks::default();
        let entry = tasks.create("alice").unwrap();
        let task = tasks.get(id(&entry), "alice").unwrap();
        assert_eq!(task.task.status(), TaskStatus::Working);
        let foreign = tasks.get(id(&entry), "bob").unwrap_err();
        assert!(
            foreign.message.contains("started by another identity"),
            "{foreign:?}"
        );
        tasks.cancel(id(&entry), "bob");
        assert!(!entry.cancel.is_cancelled());
        tasks.cancel(id(&entry), "alice");
        assert!(entry.cancel.is_cancelled());
        let unknown = tasks.get("task-0", "alice").unwrap_err();
        assert!(
            unknown.message.contains("no such task is kept here"),
            "{unknown:?}"
        );
    }
}
