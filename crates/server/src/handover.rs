//! Handing a retry over to the copy that holds its paused execution, and a task's requests to
//! the copy that runs it (`--state`).
//!
//! A paused execution lives in the process that runs it (its guest, its upstream calls in
//! flight). When the retry of its `tools/call` (the client's answers, or the model's `"resume"`)
//! reaches another copy, that copy finds the holder's address in the backend and sends it the same
//! `tools/call`, with the caller's `Authorization`, so the holder checks the caller as it checked
//! the first call; the holder's answer is the answer. A retry is handed over once: one that comes
//! handed over is never sent on.

use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, InputRequiredResult};
use serde_json::{Value, json};

/// Marks a request handed over by another copy.
pub(crate) const HANDED_OVER: &str = "x-toolweave-handed-over";

/// The longest connecting to the holder may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Headers of the retry the holder needs as they came: the caller's token and what the request
/// says of itself.
const PASSED_ON: [&str; 5] = [
    "authorization",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "traceparent",
];

/// A client for handing retries over.
pub(crate) fn client() -> Result<reqwest::Client, String> {
    // Whichever part of the process installs it first; the holder is reached over plain HTTP.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        .map_err(|error| error.to_string())
}

fn refused(why: String) -> ErrorData {
    ErrorData::invalid_params(format!("toolweave cannot resume this call: {why}"), None)
}

/// Sends the retry `request` (its `_meta` being `meta`, its headers `parts`) to the copy at
/// `holder`, and its answer back.
pub(crate) async fn hand_over(
    client: &reqwest::Client,
    holder: &str,
    request: &CallToolRequestParams,
    meta: &Value,
    parts: Option<&axum::http::request::Parts>,
    ct: &tokio_util::sync::CancellationToken,
) -> Result<CallToolResponse, ErrorData> {
    let params = serde_json::to_value(request)
        .map_err(|error| refused(format!("the retry cannot be handed over: {error}")))?;
    let sent = Sent {
        client,
        holder,
        what: "the paused execution",
        lost: "the executions it ran were lost with it; run the code again",
        refused: &refused,
    };
    let result = sent.send("tools/call", params, meta, parts, ct).await?;
    if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
        return serde_json::from_value::<InputRequiredResult>(result)
            .map(CallToolResponse::InputRequired)
            .map_err(|error| refused(format!("the holder's answer is not readable: {error}")));
    }
    serde_json::from_value::<CallToolResult>(result)
        .map(CallToolResponse::Complete)
        .map_err(|error| refused(format!("the holder's answer is not readable: {error}")))
}

/// Sends a request about task `params.taskId` (`tasks/get`, `tasks/update`, `tasks/cancel`) to
/// the copy at `holder`, which runs the task; the result it answered.
pub(crate) async fn task_to_holder(
    client: &reqwest::Client,
    holder: &str,
    method: &str,
    params: Value,
    meta: &Value,
    parts: Option<&axum::http::request::Parts>,
    ct: &tokio_util::sync::CancellationToken,
) -> Result<Value, ErrorData> {
    let refused = |why: String| {
        ErrorData::invalid_params(format!("toolweave cannot reach this task: {why}"), None)
    };
    let sent = Sent {
        client,
        holder,
        what: "the task",
        lost: "the tasks it ran were lost with it; make the call again",
        refused: &refused,
    };
    sent.send(method, params, meta, parts, ct).await
}

/// Where a request is sent on, and how its failures are worded.
struct Sent<'a> {
    client: &'a reqwest::Client,
    holder: &'a str,
    /// What the holder holds, for errors: "the paused execution", "the task".
    what: &'a str,
    /// What was lost when the holder does not answer, and what to do.
    lost: &'a str,
    refused: &'a (dyn Fn(String) -> ErrorData + Sync),
}

impl Sent<'_> {
    /// Sends `method` with `params` (and `_meta` `meta`, and the headers of `parts` the holder
    /// needs) to the holder; the result it answered, or its error.
    async fn send(
        &self,
        method: &str,
        mut params: Value,
        meta: &Value,
        parts: Option<&axum::http::request::Parts>,
        ct: &tokio_util::sync::CancellationToken,
    ) -> Result<Value, ErrorData> {
        let (holder, what, lost, refused) = (self.holder, self.what, self.lost, self.refused);
        if let (Some(fields), Some(meta)) = (params.as_object_mut(), meta.as_object())
            && !meta.is_empty()
        {
            fields.insert("_meta".to_owned(), Value::Object(meta.clone()));
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut sent = self
            .client
            .post(holder)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header(HANDED_OVER, "1")
            .body(body.to_string());
        if let Some(parts) = parts {
            for name in PASSED_ON {
                if let Some(value) = parts.headers.get(name) {
                    sent = sent.header(name, value.clone());
                }
            }
        }
        let gone = |error: reqwest::Error| {
            refused(format!(
                "the copy of toolweave that holds {what} ({holder}) does not answer ({error}): it \
                 stopped, and {lost}"
            ))
        };
        let answer = async {
            let response = sent.send().await.map_err(gone)?;
            let event_stream = response
                .headers()
                .get("content-type")
                .and_then(|value| value.to_str().ok())
                .is_some_and(|value| value.starts_with("text/event-stream"));
            let status = response.status();
            let text = response.text().await.map_err(gone)?;
            read_answer(&text, event_stream).ok_or_else(|| {
                refused(format!(
                    "the copy that holds {what} ({holder}) answered HTTP {status} with no \
                     JSON-RPC answer: {}",
                    toolweave_core::cut(text, 300)
                ))
            })
        };
        let answer = tokio::select! {
            answer = answer => answer?,
            () = ct.cancelled() => return Err(refused("the request was cancelled".to_owned())),
        };
        if let Some(error) = answer.get("error") {
            return Err(
                serde_json::from_value::<ErrorData>(error.clone()).unwrap_or_else(|_| {
                    refused(format!(
                        "the copy that holds it answered with an error: {error}"
                    ))
                }),
            );
        }
        Ok(answer.get("result").cloned().unwrap_or(Value::Null))
    }
}

/// The JSON-RPC answer in `text`: the body itself, or the last answer among an event stream's
/// `data:` lines (progress notifications come before it).
fn read_answer(text: &str, event_stream: bool) -> Option<Value> {
    if !event_stream {
        return serde_json::from_str(text).ok();
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .rfind(|message| message.get("result").is_some() || message.get("error").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_found_after_notifications() {
        let stream = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
                      data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n";
        assert_eq!(
            read_answer(stream, true),
            Some(json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}))
        );
        assert_eq!(
            read_answer("{\"id\":1,\"result\":{}}", false),
            Some(json!({"id": 1, "result": {}}))
        );
        assert_eq!(read_answer("<html>", false), None);
    }
}
