//! Questions for a client speaking MCP 2026-07-28, as multi round-trip requests.
//!
//! Such a client takes no requests from the server. When an execution it started needs something
//! from it (an approval, an upstream server's elicitation, sampling or `roots/list`, `llm.ask`),
//! the `tools/call` answers with an `InputRequiredResult` carrying the questions and a sealed
//! `requestState` ([`crate::sealed`]); the client retries the call with the answers
//! (`inputResponses`) and that state, and the retry resumes the same execution where it waits.
//! Nothing runs again: the execution runs in a task of its own and is kept here, paused, between
//! rounds. A round ends when the execution finishes (its answer is the call's result) or asks
//! something (the answer is the questions). A paused execution whose client does not come back
//! within [`PAUSE_TTL`] is cancelled and forgotten.
//!
//! Every `execute_code` runs this way, whatever its client speaks, for one more end of a round:
//! a call that waits for a person at the approval page, where the client cannot show it (it
//! declares neither form nor URL elicitation, or `--approval page` keeps the form out). Then,
//! after [`PAGE_GRACE`], the round answers early, saying where the person approves and that
//! `execute_code` with `"resume"` (the round's sealed state) waits for the execution's answer;
//! the execution goes on meanwhile, and the model is never left waiting in silence.
//!
//! With `--state`, a paused execution is still held by the copy that runs it, and the backend
//! records which copy that is ([`crate::shared`]). A retry that reaches another copy is handed
//! over to that one (`forward_retry` in `lib.rs`), which resumes it; a copy that dies loses the
//! executions it ran, and a retry of one gets an error saying so. (Replaying the execution's
//! journal of tool results on the copy the retry reached was the other way: it would run the
//! code again from the start, which is only faithful for code that does the same thing twice:
//! no clock, no randomness, no reads of a changing world outside tool calls; docs/architecture.md
//! weighs the two.)

// Sampling and roots are deprecated by SEP-2577 for the newest protocol version; they are still
// what upstream servers and `llm.ask` ask for, carried as input requests.
#![allow(deprecated)]

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientResult, ContentBlock, CreateMessageResult,
    ElicitResult, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    ListRootsResult, ServerRequest,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolweave_core::Refusal;

use crate::sealed::{Paused, Seals};
use crate::shared::SharedState;

/// How long a paused execution waits for its client's retry before it is cancelled.
pub(crate) const PAUSE_TTL: Duration = Duration::from_secs(10 * 60);

/// How long a round waits for a call at the approval page to be answered before it answers
/// early, saying where the call waits.
pub(crate) const PAGE_GRACE: Duration = Duration::from_millis(500);

/// A call of an execution that waits for a person at toolweave's approval page, which its client
/// cannot show.
#[derive(Debug, Clone)]
pub(crate) struct PageWait {
    /// The tool called (`server.tool`) and why it asks.
    pub(crate) tool: String,
    pub(crate) reason: String,
    /// The page's address and the call's id there (for `toolweave approve`).
    pub(crate) url: String,
    pub(crate) id: String,
    /// Cancelled once the call is answered, or no longer waits.
    pub(crate) over: CancellationToken,
}

/// A question of an execution, and where its answer goes.
struct Question {
    request: InputRequest,
    answer: oneshot::Sender<Value>,
}

/// Where an execution's questions go when its client speaks MCP 2026-07-28: they end the round of
/// the `tools/call` that runs it, whose answer carries them.
#[derive(Clone)]
pub(crate) struct Mailbox {
    questions: mpsc::UnboundedSender<Question>,
}

/// Where an execution says that a call of it waits at the approval page, whatever its client
/// speaks: the round answers early, saying where.
#[derive(Clone)]
pub(crate) struct PageWaits {
    waits: mpsc::UnboundedSender<PageWait>,
}

impl std::fmt::Debug for PageWaits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PageWaits { .. }")
    }
}

impl PageWaits {
    /// Says that `wait` waits; nothing when the round is over.
    pub(crate) fn waiting(&self, wait: PageWait) {
        // The execution's rounds may have ended (it was cancelled): nobody needs to know.
        let _ = self.waits.send(wait);
    }
}

impl std::fmt::Debug for Mailbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mailbox { .. }")
    }
}

impl Mailbox {
    /// Asks the client `request` (an elicitation, sampling or `roots/list`) and waits for its
    /// answer from the retry, or for `cancel`.
    pub(crate) async fn ask(
        &self,
        request: ServerRequest,
        cancel: &CancellationToken,
    ) -> Result<ClientResult, Refusal> {
        let (kind, request) = match request {
            ServerRequest::ElicitRequest(request) => {
                (Kind::Elicitation, InputRequest::Elicitation(request))
            }
            ServerRequest::CreateMessageRequest(request) => {
                (Kind::Sampling, InputRequest::CreateMessage(request))
            }
            ServerRequest::ListRootsRequest(request) => {
                (Kind::Roots, InputRequest::ListRoots(request))
            }
            _ => {
                return Err(Refusal::SessionGone(
                    "only elicitation, sampling and roots/list can be asked of an MCP 2026-07-28 \
                     client"
                        .to_owned(),
                ));
            }
        };
        let (answer, answered) = oneshot::channel();
        self.questions
            .send(Question { request, answer })
            .map_err(|_| Refusal::SessionGone("the call that asks has ended".to_owned()))?;
        let answer = tokio::select! {
            answer = answered => answer.map_err(|_| Refusal::SessionGone(
                "the client retried the call without an answer to this question".to_owned(),
            ))?,
            () = cancel.cancelled() => return Err(Refusal::CallEnded),
        };
        kind.result(answer)
    }
}

/// What a question asked, to read its answer as.
#[derive(Clone, Copy)]
enum Kind {
    Elicitation,
    Sampling,
    Roots,
}

impl Kind {
    fn result(self, answer: Value) -> Result<ClientResult, Refusal> {
        let unreadable = |error: serde_json::Error| {
            Refusal::SessionGone(format!(
                "its answer in inputResponses is not a result of the request asked: {error}"
            ))
        };
        Ok(match self {
            Self::Elicitation => ClientResult::ElicitResult(
                serde_json::from_value::<ElicitResult>(answer).map_err(unreadable)?,
            ),
            Self::Sampling => ClientResult::CreateMessageResult(Box::new(
                serde_json::from_value::<CreateMessageResult>(answer).map_err(unreadable)?,
            )),
            Self::Roots => ClientResult::ListRootsResult(
                serde_json::from_value::<ListRootsResult>(answer).map_err(unreadable)?,
            ),
        })
    }
}

/// An execution that runs across rounds.
struct Execution {
    /// The identity that started it (empty for none), and the tool called.
    caller: String,
    tool: String,
    /// Held by the round that drives it.
    driver: tokio::sync::Mutex<Driver>,
    /// The questions sent to the client, by key, and the round they were sent in (0 when no round
    /// waits for a retry).
    waiting: Mutex<Waiting>,
    cancel: CancellationToken,
    /// For a task's execution: where its calls waiting at the approval page are told, instead
    /// of ending the round (`tasks.rs`).
    tell: Option<WaitTeller>,
}

/// Where an execution run as a task tells the calls that wait at the approval page.
pub(crate) type WaitTeller = Box<dyn Fn(Vec<PageWait>) + Send + Sync>;

#[derive(Default)]
struct Waiting {
    round: u64,
    answers: HashMap<String, oneshot::Sender<Value>>,
}

struct Driver {
    /// The execution's task, until its result is taken.
    result: Option<JoinHandle<CallToolResult>>,
    questions: mpsc::UnboundedReceiver<Question>,
    waits: mpsc::UnboundedReceiver<PageWait>,
    /// Rounds and questions so far, for the next round's number and question keys.
    rounds: u64,
    asked: u64,
}

/// The executions paused for their clients' answers, in this process.
pub(crate) struct Rounds {
    seals: Arc<Seals>,
    paused: Mutex<HashMap<String, Arc<Execution>>>,
    /// With `--state`: where the copy holding each paused execution is recorded, and this
    /// copy's address there.
    shared: Option<(Arc<SharedState>, String)>,
}

impl std::fmt::Debug for Rounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Rounds { .. }")
    }
}

impl Rounds {
    /// Rounds whose states `seals` seals; with `shared`, recording in it that this copy (at
    /// the address given) holds the executions it pauses.
    pub(crate) fn new(seals: Arc<Seals>, shared: Option<(Arc<SharedState>, String)>) -> Self {
        Self {
            seals,
            paused: Mutex::default(),
            shared,
        }
    }

    /// The paused execution `state` names, when another copy holds it (with `--state`): its id,
    /// for finding that copy. `None` when this copy holds it, or the state does not open (the
    /// resume here says why).
    pub(crate) fn elsewhere(&self, state: &str, caller: &str, tool: &str) -> Option<String> {
        self.shared.as_ref()?;
        let Paused { execution, .. } = self.seals.get().ok()?.open(state, caller, tool).ok()?;
        (!self.paused().contains_key(&execution)).then_some(execution)
    }

    /// Records that this copy holds paused execution `id` (with `--state`).
    async fn hold(&self, id: &str) {
        if let Some((shared, own)) = &self.shared
            && let Err(why) = shared.hold(id, own, PAUSE_TTL).await
        {
            tracing::warn!(execution = id, %why, "a retry that reaches another copy will not find this execution");
        }
    }

    /// Forgets that this copy holds execution `id`.
    fn release(&self, id: &str) {
        if let Some((shared, _)) = &self.shared {
            let shared = shared.clone();
            let id = id.to_owned();
            tokio::spawn(async move { shared.release(&id).await });
        }
    }

    fn paused(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Execution>>> {
        // The map stays whole whatever panicked while the lock was held.
        self.paused.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts `work` (an execution, or a call of a tool listed directly) for `caller` calling
    /// `tool` in a task of its own, with the mailbox its questions go to and the token that
    /// cancels it; the first round's answer. `ct` is the call's: when it is cancelled, so is the
    /// work.
    pub(crate) async fn start<F>(
        self: &Arc<Self>,
        caller: &str,
        tool: &str,
        work: impl FnOnce(Mailbox, PageWaits, CancellationToken) -> F,
        ct: &CancellationToken,
    ) -> CallToolResponse
    where
        F: Future<Output = CallToolResult> + Send + 'static,
    {
        self.start_telling(caller, tool, work, ct, None).await
    }

    /// [`Rounds::start`], with calls waiting at the approval page told to `tell` (when given)
    /// rather than ending the round: a task's execution runs on, and its status says where.
    pub(crate) async fn start_telling<F>(
        self: &Arc<Self>,
        caller: &str,
        tool: &str,
        work: impl FnOnce(Mailbox, PageWaits, CancellationToken) -> F,
        ct: &CancellationToken,
        tell: Option<WaitTeller>,
    ) -> CallToolResponse
    where
        F: Future<Output = CallToolResult> + Send + 'static,
    {
        let (questions, asked) = mpsc::unbounded_channel();
        let (waits, waiting) = mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let task = tokio::spawn(work(
            Mailbox { questions },
            PageWaits { waits },
            cancel.clone(),
        ));
        let execution = Arc::new(Execution {
            caller: caller.to_owned(),
            tool: tool.to_owned(),
            driver: tokio::sync::Mutex::new(Driver {
                result: Some(task),
                questions: asked,
                waits: waiting,
                rounds: 0,
                asked: 0,
            }),
            waiting: Mutex::default(),
            cancel,
            tell,
        });
        let id = crate::sealed::random_id();
        self.paused().insert(id.clone(), execution.clone());
        self.drive(&id, &execution, ct).await
    }

    /// Resumes the execution `state` names with the client's `responses`; the next round's
    /// answer. `Err` when the state does not open for `caller` calling `tool`, or names no
    /// execution waiting for this retry.
    /// `what` names the state as it came, for errors: `requestState` (a client's retry), or
    /// `"resume"` (the model's pick-up of an execution that answered early).
    pub(crate) async fn resume(
        self: &Arc<Self>,
        state: &str,
        mut responses: InputResponses,
        caller: &str,
        tool: &str,
        what: &str,
        ct: &CancellationToken,
    ) -> Result<CallToolResponse, ErrorData> {
        let refused = |why: String| {
            ErrorData::invalid_params(format!("toolweave cannot resume this call: {why}"), None)
        };
        let sealer = self.seals.get().map_err(refused)?;
        let Paused {
            execution: id,
            round,
        } = sealer
            .open(state, caller, tool)
            .map_err(|why| refused(why.words(what)))?;
        let execution = self.paused().get(&id).cloned().ok_or_else(|| {
            refused(format!(
                "the execution it names is no longer paused here: it was answered, or given up on \
                 after {} minutes without a retry; run the code again",
                PAUSE_TTL.as_secs() / 60
            ))
        })?;
        // The state was sealed for this caller and tool; the execution was started by them too.
        if execution.caller != caller || execution.tool != tool {
            return Err(refused("it names another caller's call".to_owned()));
        }
        let answers = {
            let mut waiting = execution
                .waiting
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if waiting.round != round {
                return Err(refused(format!(
                    "its {what} was already used, or is of an earlier round; send the {what} of \
                     the call's latest answer"
                )));
            }
            waiting.round = 0;
            std::mem::take(&mut waiting.answers)
        };
        for (key, answer) in answers {
            match responses.remove(&key) {
                Some(response) => {
                    // The question may have been given up on meanwhile (its call ended).
                    let _ = answer.send(response);
                }
                None => tracing::debug!(key, "a retry carried no answer to a question"),
            }
        }
        if !responses.is_empty() {
            tracing::debug!(
                keys = ?responses.keys().collect::<Vec<_>>(),
                "a retry carried answers to questions that were not asked; they are ignored"
            );
        }
        Ok(self.drive(&id, &execution, ct).await)
    }

    /// Cancels and forgets the paused execution `state` names, when it opens for `caller`
    /// calling `tool` (a task cancelled, or given up on, while it waited for answers).
    pub(crate) fn abandon(&self, state: &str, caller: &str, tool: &str) {
        let Ok(sealer) = self.seals.get() else {
            return;
        };
        let Ok(Paused { execution: id, .. }) = sealer.open(state, caller, tool) else {
            return;
        };
        let execution = self.paused().remove(&id);
        if let Some(execution) = execution {
            execution.cancel.cancel();
            self.release(&id);
        }
    }

    /// Runs one round: until the execution finishes, asks something, or `ct` is cancelled.
    async fn drive(
        self: &Arc<Self>,
        id: &str,
        execution: &Arc<Execution>,
        ct: &CancellationToken,
    ) -> CallToolResponse {
        let mut driver = execution.driver.lock().await;
        let driver = &mut *driver;
        let Some(task) = driver.result.as_mut() else {
            return CallToolResponse::Complete(failed("the call was answered already"));
        };
        enum Ended {
            Finished(Result<CallToolResult, tokio::task::JoinError>),
            Asked(Question),
            Waiting(Vec<PageWait>),
            Cancelled,
        }
        // Calls waiting at the approval page, and when the round stops waiting for their answers.
        let mut waits: Vec<PageWait> = Vec::new();
        let mut grace_until: Option<tokio::time::Instant> = None;
        let ended = loop {
            let until = grace_until.unwrap_or_else(tokio::time::Instant::now);
            break tokio::select! {
                biased;
                finished = &mut *task => Ended::Finished(finished),
                Some(question) = driver.questions.recv() => Ended::Asked(question),
                Some(wait) = driver.waits.recv() => {
                    grace_until.get_or_insert_with(|| tokio::time::Instant::now() + PAGE_GRACE);
                    waits.push(wait);
                    continue;
                }
                () = tokio::time::sleep_until(until), if grace_until.is_some() => {
                    waits.retain(|wait| !wait.over.is_cancelled());
                    if waits.is_empty() {
                        grace_until = None;
                        continue;
                    }
                    if let Some(tell) = &execution.tell {
                        tell(std::mem::take(&mut waits));
                        grace_until = None;
                        continue;
                    }
                    Ended::Waiting(std::mem::take(&mut waits))
                }
                () = ct.cancelled() => Ended::Cancelled,
            };
        };
        let finished = match ended {
            Ended::Waiting(waits) => {
                let answer = self.answer_early(id, execution, driver, &waits);
                self.hold(id).await;
                return answer;
            }
            Ended::Finished(finished) => finished,
            Ended::Asked(question) => {
                let mut questions = vec![question];
                while let Ok(question) = driver.questions.try_recv() {
                    questions.push(question);
                }
                let answer = self.pause(id, execution, driver, questions);
                self.hold(id).await;
                return answer;
            }
            Ended::Cancelled => {
                execution.cancel.cancel();
                match driver.result.as_mut() {
                    Some(task) => task.await,
                    None => return CallToolResponse::Complete(failed("the call was cancelled")),
                }
            }
        };
        driver.result = None;
        if self.paused().remove(id).is_some() && driver.rounds > 0 {
            self.release(id);
        }
        CallToolResponse::Complete(
            finished
                .unwrap_or_else(|error| failed(&format!("the execution's task failed: {error}"))),
        )
    }

    /// Ends the round with `questions`: they wait for the retry under a new round's sealed state.
    fn pause(
        self: &Arc<Self>,
        id: &str,
        execution: &Arc<Execution>,
        driver: &mut Driver,
        questions: Vec<Question>,
    ) -> CallToolResponse {
        driver.rounds += 1;
        let round = driver.rounds;
        let mut requests = InputRequests::new();
        let mut answers = HashMap::new();
        // A question given up on before it went out (its call ended) is not asked.
        for question in questions.into_iter().filter(|q| !q.answer.is_closed()) {
            driver.asked += 1;
            let key = format!("toolweave-{}", driver.asked);
            requests.insert(key.clone(), question.request);
            answers.insert(key, question.answer);
        }
        let state = match self.seal_round(id, execution, round) {
            Ok(state) => state,
            Err(error) => {
                execution.cancel.cancel();
                self.paused().remove(id);
                return CallToolResponse::Complete(failed(&format!(
                    "the execution needs an answer from the client, and toolweave could not \
                     pause it: {error}"
                )));
            }
        };
        *execution
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Waiting { round, answers };
        self.expire(id, execution, round);
        let requests = (!requests.is_empty()).then_some(requests);
        CallToolResponse::InputRequired(InputRequiredResult::new(requests, Some(state)))
    }

    /// Ends the round with an answer for the model: `waits` wait for a person at the approval
    /// page, and `execute_code` with `"resume"` waits for the execution's answer.
    fn answer_early(
        self: &Arc<Self>,
        id: &str,
        execution: &Arc<Execution>,
        driver: &mut Driver,
        waits: &[PageWait],
    ) -> CallToolResponse {
        driver.rounds += 1;
        let round = driver.rounds;
        let state = match self.seal_round(id, execution, round) {
            Ok(state) => state,
            Err(error) => {
                execution.cancel.cancel();
                self.paused().remove(id);
                return CallToolResponse::Complete(failed(&format!(
                    "a call of the execution waits for a person's approval at {}, and toolweave \
                     could not keep the execution for later: {error}",
                    waits.first().map_or("", |wait| wait.url.as_str())
                )));
            }
        };
        *execution
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Waiting {
            round,
            answers: HashMap::new(),
        };
        self.expire(id, execution, round);
        CallToolResponse::Complete(waiting_answer(waits, &state))
    }

    /// The sealed state of `execution`'s round `round`, for its caller and tool.
    fn seal_round(&self, id: &str, execution: &Execution, round: u64) -> Result<String, String> {
        let paused = Paused {
            execution: id.to_owned(),
            round,
        };
        self.seals
            .get()
            .and_then(|sealer| sealer.seal(&paused, &execution.caller, &execution.tool, PAUSE_TTL))
    }

    /// Cancels and forgets the execution when no retry of round `round` came within
    /// [`PAUSE_TTL`].
    fn expire(self: &Arc<Self>, id: &str, execution: &Arc<Execution>, round: u64) {
        let rounds = Arc::downgrade(self);
        let execution = Arc::downgrade(execution);
        let id = id.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(PAUSE_TTL).await;
            let (Some(rounds), Some(execution)) = (rounds.upgrade(), execution.upgrade()) else {
                return;
            };
            let still_waiting = execution
                .waiting
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .round
                == round;
            if still_waiting {
                tracing::info!(
                    execution = %id,
                    "a paused execution's client did not retry within {} s; it is cancelled",
                    PAUSE_TTL.as_secs()
                );
                execution.cancel.cancel();
                rounds.paused().remove(&id);
            }
        });
    }
}

/// The early answer of an execution whose calls `waits` wait at the approval page: where the
/// person approves, and how the model gets the execution's answer (`state`, as `"resume"`).
fn waiting_answer(waits: &[PageWait], state: &str) -> CallToolResult {
    let calls: Vec<String> = waits
        .iter()
        .map(|wait| {
            format!(
                "a call of {} ({}) waits at {} (or `toolweave approve {}` on the gateway's machine)",
                wait.tool, wait.reason, wait.url, wait.id
            )
        })
        .collect();
    let text = format!(
        "Not finished: the execution waits for a person's approval: {}. Tell the person where to \
         answer; the execution goes on once they do. To wait for its answer, call execute_code \
         with {{\"code\": \"\", \"resume\": \"{state}\"}} (the code is not run again); without that \
         call it is given up on after {} minutes.",
        calls.join("; "),
        PAUSE_TTL.as_secs() / 60
    );
    let approvals: Vec<Value> = waits
        .iter()
        .map(|wait| {
            serde_json::json!({
                "tool": wait.tool,
                "reason": wait.reason,
                "url": wait.url,
                "id": wait.id,
            })
        })
        .collect();
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(serde_json::json!({
        "waiting": { "approvals": approvals, "resume": state },
    }));
    result
}

fn failed(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.to_owned())])
}
