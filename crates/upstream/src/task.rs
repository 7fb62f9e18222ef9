//! A call that a server runs as a task (the tasks extension of MCP 2026-07-28,
//! `io.modelcontextprotocol/tasks`, which toolweave declares): the server answers `tools/call`
//! with a task at once, and toolweave polls it with `tasks/get`, as often as the server asks,
//! until it completes, fails or is cancelled. A task that waits for input has its questions
//! passed on to the client session whose code made the call (`input.rs`), and their answers sent
//! with `tasks/update`. The wait is bounded by the call's own timeout; a call that times out or
//! is cancelled cancels its task at the server (`tasks/cancel`). Caller code sees the task's
//! result as the result of the call. rmcp has the requests but no wait for a task's result
//! (docs/rmcp.md, section 7).

use std::collections::BTreeSet;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolResult, CancelTaskParams, CreateTaskResult, GetTaskParams, InputRequests, JsonObject,
    Task, TaskPayload, UpdateTaskParams,
};
use rmcp::service::Peer;
use serde_json::Value;
use tokio::time::Instant;

use crate::error::Delivery;
use crate::input::{Asking, answer};
use crate::manager::Connection;
use crate::{CallOptions, Error, Result, UpstreamManager};

/// How often a task is polled when the server does not say.
const DEFAULT_POLL: Duration = Duration::from_secs(1);
/// The bounds put on the interval a server asks for: it is honoured within them.
const POLL_BOUNDS: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(30));
/// How long the `tasks/cancel` of an abandoned task may take; nobody waits for it.
const CANCEL_LIMIT: Duration = Duration::from_secs(5);

impl UpstreamManager {
    /// Waits, within the call's timeout, for the result of the task `created` that server
    /// `server` runs for a call to `tool`.
    pub(crate) async fn wait_for_task(
        &self,
        server: &str,
        tool: &str,
        created: CreateTaskResult,
        options: &CallOptions<'_>,
    ) -> Result<CallToolResult> {
        let index = self.index_of(server)?;
        let connection = self.connection(index).await?;
        let task = created.task.task_id.clone();
        tracing::debug!(server, tool, task, "the server runs the call as a task");
        let (limit, limit_from) = self.call_limit(index, tool, options.timeout);
        let taken = options.taken.unwrap_or_else(Instant::now);
        let polls = self.poll_task(server, tool, &connection, &created.task, options);
        let outcome = tokio::select! {
            biased;
            () = options.cancel.cancelled() => Err(Error::Cancelled),
            outcome = tokio::time::timeout_at(taken + limit, polls) => match outcome {
                Ok(outcome) => return outcome,
                Err(_elapsed) => Err(Error::CallTimeout {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                    limit,
                    limit_from,
                    delivery: Delivery::Sent { waited: Duration::ZERO, upstream: taken.elapsed() },
                }),
            },
            () = self.life_over(index, connection.life) => return Err(Error::CallFailed {
                server: server.to_owned(),
                tool: tool.to_owned(),
                message: format!("the connection to the server was lost while its task {task} ran"),
            }),
        };
        cancel_task(connection.peer.clone(), server.to_owned(), task);
        outcome
    }

    /// Polls the task until it ends, answering what it asks on the way.
    async fn poll_task(
        &self,
        server: &str,
        tool: &str,
        connection: &Connection,
        created: &Task,
        options: &CallOptions<'_>,
    ) -> Result<CallToolResult> {
        let id = created.task_id.clone();
        let mut interval = poll_interval(created);
        // A task may still show questions it was answered (`tasks/update` is acknowledged before
        // it is applied): each is asked once.
        let mut answered = BTreeSet::new();
        loop {
            tokio::time::sleep(interval).await;
            let polled = match connection
                .peer
                .get_task(GetTaskParams::new(id.clone()))
                .await
            {
                Ok(polled) => polled,
                Err(error) => {
                    let index = self.index_of(server)?;
                    return Err(self
                        .call_failure(index, tool, connection, None, error)
                        .await);
                }
            };
            interval = poll_interval(&polled.task.task);
            let ended = |outcome: String| Error::TaskEnded {
                server: server.to_owned(),
                tool: tool.to_owned(),
                task: id.clone(),
                outcome,
            };
            match polled.task.payload {
                TaskPayload::Completed { result } => {
                    return serde_json::from_value(Value::Object(result)).map_err(|error| {
                        ended(format!(
                            "completed with a result that is not a tool result ({error})"
                        ))
                    });
                }
                TaskPayload::Failed { error } => return Err(ended(failure(&error))),
                TaskPayload::Cancelled => {
                    return Err(ended("was cancelled at the server".to_owned()));
                }
                TaskPayload::InputRequired { input_requests } => {
                    let asked: InputRequests = input_requests
                        .into_iter()
                        .filter(|(key, _)| !answered.contains(key))
                        .collect();
                    if asked.is_empty() {
                        continue;
                    }
                    answered.extend(asked.keys().cloned());
                    let asking = Asking {
                        server,
                        tool,
                        listener: options.listener,
                        cancel: &options.cancel,
                    };
                    let answers = answer(&asking, asked).await?;
                    let update = UpdateTaskParams::new(id.clone(), answers);
                    if let Err(error) = connection.peer.update_task(update).await {
                        let index = self.index_of(server)?;
                        return Err(self
                            .call_failure(index, tool, connection, None, error)
                            .await);
                    }
                }
                // Working, or a status of a later revision: the task goes on.
                _ => {}
            }
        }
    }

    /// Asks the client session of `options` the questions of one round of input, within what is
    /// left of the call's timeout.
    pub(crate) async fn answer_within(
        &self,
        server: &str,
        tool: &str,
        requests: InputRequests,
        options: &CallOptions<'_>,
    ) -> Result<rmcp::model::InputResponses> {
        let index = self.index_of(server)?;
        let (limit, limit_from) = self.call_limit(index, tool, options.timeout);
        let taken = options.taken.unwrap_or_else(Instant::now);
        let asking = Asking {
            server,
            tool,
            listener: options.listener,
            cancel: &options.cancel,
        };
        let answers = tokio::select! {
            biased;
            () = options.cancel.cancelled() => return Err(Error::Cancelled),
            answers = tokio::time::timeout_at(taken + limit, answer(&asking, requests)) => answers,
        };
        answers.unwrap_or_else(|_elapsed| {
            Err(Error::InputUnanswered {
                server: server.to_owned(),
                tool: tool.to_owned(),
                method: "input",
                cause: format!(
                    "the client did not answer within the call's timeout of {} ms ({limit_from}); \
                     answer sooner, or raise the timeout",
                    limit.as_millis(),
                ),
            })
        })
    }
}

/// The interval the server asks for between polls of `task`, within [`POLL_BOUNDS`].
fn poll_interval(task: &Task) -> Duration {
    task.poll_interval_ms
        .map_or(DEFAULT_POLL, Duration::from_millis)
        .clamp(POLL_BOUNDS.0, POLL_BOUNDS.1)
}

/// A failed task's JSON-RPC error, in words.
fn failure(error: &JsonObject) -> String {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("no message");
    match error.get("code").and_then(Value::as_i64) {
        Some(code) => format!("failed: {message} (JSON-RPC error {code})"),
        None => format!("failed: {message}"),
    }
}

/// Tells the server its task `task` is no longer waited for, in the background.
fn cancel_task(peer: Peer<RoleClient>, server: String, task: String) {
    tokio::spawn(async move {
        let cancel = peer.cancel_task(CancelTaskParams::new(task.clone()));
        match tokio::time::timeout(CANCEL_LIMIT, cancel).await {
            Ok(Ok(())) => tracing::debug!(%server, %task, "cancelled the task at the server"),
            Ok(Err(error)) => {
                tracing::debug!(%server, %task, %error, "tasks/cancel failed");
            }
            Err(_elapsed) => tracing::debug!(%server, %task, "tasks/cancel was not answered"),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_as_often_as_the_server_asks_within_bounds() {
        let mut task = Task::new("t", rmcp::model::TaskStatus::Working, "", "");
        assert_eq!(poll_interval(&task), DEFAULT_POLL);
        task.poll_interval_ms = Some(250);
        assert_eq!(poll_interval(&task), Duration::from_millis(250));
        task.poll_interval_ms = Some(0);
        assert_eq!(poll_interval(&task), POLL_BOUNDS.0);
        task.poll_interval_ms = Some(u64::MAX);
        assert_eq!(poll_interval(&task), POLL_BOUNDS.1);
    }

    #[test]
    fn a_failed_task_says_why() {
        let error = serde_json::json!({ "code": -32603, "message": "disk full" });
        let Value::Object(error) = error else {
            unreachable!()
        };
        assert_eq!(failure(&error), "failed: disk full (JSON-RPC error -32603)");
    }
}
