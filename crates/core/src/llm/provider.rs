//! The settings file's `"llm"`: an Anthropic Messages endpoint (`POST {url}/v1/messages`,
//! `x-api-key`, `anthropic-version: 2023-06-01`) or an OpenAI-compatible one
//! (`POST {url}/chat/completions`, `Authorization: Bearer`). The key is read from the
//! environment variable the settings name when a request is sent, goes into a header marked
//! sensitive, and is never logged or shown to code; errors name the variable, never its value.

use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolweave_config::{LlmKind, LlmProvider};
use toolweave_sandbox::LlmAsk;

use super::{Answer, Failure};
use crate::error::{LlmError, MAX_ERROR_TEXT, cut};

/// The most of a provider's answer read, in bytes.
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// The most of an error body an error quotes, in bytes.
const MAX_QUOTED_BYTES: usize = 300;

/// Asks `provider`, within `limit` (which `by` names), until `cancel`.
pub(super) async fn answer(
    provider: &LlmProvider,
    function: &'static str,
    ask: &LlmAsk,
    max_tokens: u32,
    limit: Duration,
    by: &'static str,
    cancel: &CancellationToken,
) -> Result<(&'static str, Answer), Failure> {
    let via = match provider.kind {
        LlmKind::Anthropic => "anthropic",
        LlmKind::Openai => "openai",
    };
    let Ok(key) = std::env::var(&provider.api_key_env) else {
        return Err(Failure {
            via,
            error: LlmError::NoKey {
                function,
                variable: provider.api_key_env.clone(),
            },
        });
    };
    // What the endpoint says is quoted in errors: never with the key, should it echo it.
    let failed = |reason: String| Failure {
        via,
        error: LlmError::Provider {
            function,
            kind: via,
            url: provider.url.clone(),
            reason: cut(
                if key.is_empty() {
                    reason
                } else {
                    reason.replace(&key, "[the key]")
                },
                MAX_ERROR_TEXT,
            ),
        },
    };
    let client = toolweave_upstream::http_client().map_err(failed)?;
    let request = request(&client, provider, &key, ask, max_tokens)
        .map_err(|error| failed(format!("the request could not be made: {error}")))?;
    let exchange = async {
        let response = request.timeout(limit).send().await?;
        let status = response.status();
        let body = read_bounded(response).await?;
        Ok::<_, reqwest::Error>((status, body))
    };
    let (status, body) = tokio::select! {
        exchanged = exchange => exchanged.map_err(|error| {
            if error.is_timeout() {
                Failure { via, error: LlmError::Timeout { function, limit_ms: limit.as_millis(), by } }
            } else {
                failed(toolweave_upstream::describe_http_error(&error))
            }
        })?,
        () = tokio::time::sleep(limit) => {
            return Err(Failure { via, error: LlmError::Timeout { function, limit_ms: limit.as_millis(), by } });
        }
        () = cancel.cancelled() => {
            return Err(Failure { via, error: LlmError::Cancelled { function } });
        }
    };
    let Some(body) = body else {
        return Err(failed(format!(
            "its answer is larger than {MAX_ANSWER_BYTES} bytes"
        )));
    };
    if !status.is_success() {
        return Err(failed(format!(
            "it answered HTTP {status}{}",
            quoted_error(&body)
        )));
    }
    let value: Value = serde_json::from_slice(&body).map_err(|error| {
        failed(format!(
            "its answer is not JSON ({error}): {}",
            quote(&body)
        ))
    })?;
    let answer = match provider.kind {
        LlmKind::Anthropic => anthropic_answer(&value),
        LlmKind::Openai => openai_answer(&value),
    };
    answer.map(|answer| (via, answer)).map_err(failed)
}

/// The HTTP request for `ask`, with the key in a header marked sensitive.
fn request(
    client: &reqwest::Client,
    provider: &LlmProvider,
    key: &str,
    ask: &LlmAsk,
    max_tokens: u32,
) -> Result<reqwest::RequestBuilder, String> {
    use reqwest::header::{AUTHORIZATION, HeaderValue};
    let base = provider.url.trim_end_matches('/');
    let mut messages: Vec<Value> = Vec::with_capacity(ask.messages.len() + 1);
    let (url, header, value) = match provider.kind {
        LlmKind::Anthropic => (format!("{base}/v1/messages"), "x-api-key", key.to_owned()),
        LlmKind::Openai => {
            if let Some(system) = &ask.system {
                messages.push(json!({ "role": "system", "content": system }));
            }
            (
                format!("{base}/chat/completions"),
                AUTHORIZATION.as_str(),
                format!("Bearer {key}"),
            )
        }
    };
    messages.extend(
        ask.messages
            .iter()
            .map(|message| json!({ "role": message.role.as_str(), "content": message.text })),
    );
    let mut body = json!({
        "model": provider.model,
        "max_tokens": max_tokens,
        "messages": messages,
    });
    if provider.kind == LlmKind::Anthropic
        && let Some(system) = &ask.system
    {
        body["system"] = json!(system);
    }
    let mut secret = HeaderValue::from_str(&value).map_err(|_| {
        format!(
            "the key in {} is not a valid header value",
            provider.api_key_env
        )
    })?;
    secret.set_sensitive(true);
    let mut request = client.post(url).header(header, secret).json(&body);
    if provider.kind == LlmKind::Anthropic {
        request = request.header("anthropic-version", "2023-06-01");
    }
    Ok(request)
}

/// The body, or `None` when it is larger than [`MAX_ANSWER_BYTES`].
async fn read_bounded(mut response: reqwest::Response) -> Result<Option<Vec<u8>>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// An Anthropic Messages answer: its text blocks, model, stop reason and usage.
fn anthropic_answer(value: &Value) -> Result<Answer, String> {
    let text: Vec<&str> = value["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter(|block| block["type"] == "text")
                .filter_map(|block| block["text"].as_str())
                .collect()
        })
        .unwrap_or_default();
    if text.is_empty() {
        return Err(format!(
            "its answer has no text in \"content\": {}",
            quote(value.to_string().as_bytes())
        ));
    }
    let stop_reason = value["stop_reason"].as_str().map(|reason| {
        match reason {
            "end_turn" => "endTurn",
            "max_tokens" => "maxTokens",
            "stop_sequence" => "stopSequence",
            "tool_use" => "toolUse",
            other => other,
        }
        .to_owned()
    });
    Ok(Answer {
        text: text.concat(),
        model: value["model"].as_str().unwrap_or_default().to_owned(),
        stop_reason,
        input_tokens: value["usage"]["input_tokens"].as_u64(),
        output_tokens: value["usage"]["output_tokens"].as_u64(),
    })
}

/// An OpenAI-compatible chat completion: its first choice's text, model, finish reason and
/// usage.
fn openai_answer(value: &Value) -> Result<Answer, String> {
    let choice = &value["choices"][0];
    let Some(text) = choice["message"]["content"].as_str() else {
        return Err(format!(
            "its answer has no text at choices[0].message.content: {}",
            quote(value.to_string().as_bytes())
        ));
    };
    let stop_reason = choice["finish_reason"].as_str().map(|reason| {
        match reason {
            "stop" => "endTurn",
            "length" => "maxTokens",
            "tool_calls" => "toolUse",
            other => other,
        }
        .to_owned()
    });
    Ok(Answer {
        text: text.to_owned(),
        model: value["model"].as_str().unwrap_or_default().to_owned(),
        stop_reason,
        input_tokens: value["usage"]["prompt_tokens"].as_u64(),
        output_tokens: value["usage"]["completion_tokens"].as_u64(),
    })
}

/// `: <the provider's error message>`, from an error body of either API, when it has one.
fn quoted_error(body: &[u8]) -> String {
    let message = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|value| value["error"]["message"].as_str().map(str::to_owned));
    match message {
        Some(message) => format!(": {}", cut(message, MAX_QUOTED_BYTES)),
        None if body.is_empty() => String::new(),
        None => format!(": {}", quote(body)),
    }
}

/// The start of a body, for an error.
fn quote(body: &[u8]) -> String {
    let end = body.len().min(MAX_QUOTED_BYTES);
    let text = String::from_utf8_lossy(&body[..end]).into_owned();
    if end < body.len() {
        format!("{text}…")
    } else {
        text
    }
}
