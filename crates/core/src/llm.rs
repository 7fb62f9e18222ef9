//! The model's LLM from code: `llm.ask(prompt, options?)` and `llm.think(request)`.
//!
//! A request goes to the MCP client of the session that runs the execution, as
//! `sampling/createMessage`, through the same [`ClientSession`] that upstream servers' sampling
//! requests take (`crates/server/src/forward.rs`), so it travels in the name of the
//! `execute_code` request and is cancelled at the client when the execution ends. A client that
//! did not declare sampling (Claude Code declares none) is answered by the provider of the
//! settings file's `"llm"` instead (`provider.rs` beside this file), when there is one; a
//! provider whose `"when"` is `"always"` answers every request.
//!
//! Each execution has budgets of its own ([`LlmBudget`]): rounds (`--max-llm-rounds`) and tokens
//! (`--max-llm-tokens`, the sum of the `maxTokens` asked). A request that asks for more tokens
//! than are left is refused rather than clamped: an answer cut short at a bound the code did not
//! choose would look complete, and the error tells the code how many it may still ask for. A
//! request that names no `maxTokens` asks for [`DEFAULT_MAX_TOKENS`], or what is left when that
//! is less. With an allowlist of system prompts (`--llm-system-prompts`, `"llmSystemPrompts"`),
//! only those exact prompts may be sent, and a request must send one. Every request, answered
//! or refused, is in the execution's audit line: hashes and sizes of the prompt and the answer,
//! the model, the tokens; the texts themselves only with `--audit-log-contents`.

// MCP sampling is deprecated by SEP-2577 for the newest protocol version; clients speaking
// 2025-11-25 and before still serve it.
#![allow(deprecated)]

mod provider;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolweave_config::{LlmProvider, LlmWhen};
use toolweave_sandbox::LlmAsk;
use toolweave_upstream::{ClientSession, ForwardedAnswer, ForwardedRequest, Refusal};

use crate::audit::{LlmRecord, millis, sha256_hex};
use crate::error::LlmError;

/// How long past the execution's deadline a request bound by it may still wait (see
/// `time_left`).
const DEADLINE_BACKSTOP: Duration = Duration::from_secs(1);
/// Tokens a request asks for when code gives no `maxTokens` (or what is left, when less).
pub const DEFAULT_MAX_TOKENS: u32 = 1024;

/// How the gateway answers `llm.ask` and `llm.think`: the budgets of each execution, the system
/// prompts allowed, and the provider for clients that cannot sample.
#[derive(Debug, Clone)]
pub struct LlmOptions {
    /// Requests one execution may send (`--max-llm-rounds`).
    pub max_rounds: u32,
    /// The sum of `maxTokens` one execution's requests may ask for (`--max-llm-tokens`).
    pub max_tokens: u64,
    /// The longest one request may take (`--llm-timeout-ms`); the execution's deadline bounds it
    /// too.
    pub timeout: Duration,
    /// The only system prompts code may send, when set (`--llm-system-prompts`,
    /// `"llmSystemPrompts"`).
    pub system_prompts: Option<BTreeSet<String>>,
    /// The settings file's `"llm"`: an endpoint of the user's own.
    pub provider: Option<LlmProvider>,
}

impl Default for LlmOptions {
    fn default() -> Self {
        Self {
            max_rounds: 10,
            max_tokens: 20_000,
            timeout: Duration::from_secs(60),
            system_prompts: None,
            provider: None,
        }
    }
}

/// One execution's use of the LLM: its client, what it has spent, and the audit records.
#[derive(Debug)]
pub(crate) struct LlmBudget {
    options: Arc<LlmOptions>,
    /// The MCP client session that runs the execution, when there is one.
    client: Option<Arc<dyn ClientSession>>,
    /// When the execution's deadline passes.
    deadline: tokio::time::Instant,
    spent: Mutex<Spent>,
    records: Mutex<Vec<LlmRecord>>,
}

#[derive(Debug, Default)]
struct Spent {
    rounds: u32,
    tokens: u64,
}

/// What the model answered.
#[derive(Debug)]
pub(crate) struct Answer {
    text: String,
    model: String,
    stop_reason: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

/// Why a request was not answered, with the route it took (for the audit log).
struct Failure {
    via: &'static str,
    error: LlmError,
}

impl LlmBudget {
    /// The budget of one execution whose deadline is `timeout` from now, asking `client`.
    pub(crate) fn new(
        options: Arc<LlmOptions>,
        client: Option<Arc<dyn ClientSession>>,
        timeout: Duration,
    ) -> Self {
        Self {
            options,
            client,
            deadline: tokio::time::Instant::now() + timeout,
            spent: Mutex::default(),
            records: Mutex::default(),
        }
    }

    /// The audit records so far, in the order the requests ended.
    pub(crate) fn take_records(&self) -> Vec<LlmRecord> {
        std::mem::take(&mut *self.records.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Answers `ask`: the text (`llm.ask`), or `{text, model, stopReason}` (`llm.think`).
    /// `cancel` fires when the execution ends; `contents` writes the texts into the audit log.
    pub(crate) async fn answer(
        &self,
        ask: LlmAsk,
        cancel: CancellationToken,
        contents: bool,
    ) -> Result<Value, LlmError> {
        let function = if ask.whole { "llm.think" } else { "llm.ask" };
        let started = Instant::now();
        let prompt = json!({
            "system": ask.system,
            "messages": ask.messages.iter().map(|message| json!({
                "role": message.role.as_str(),
                "content": message.text,
            })).collect::<Vec<_>>(),
        });
        let prompt_text = prompt.to_string();
        let mut record = LlmRecord {
            function,
            via: "none",
            outcome: "refused",
            duration_ms: 0.0,
            model: None,
            max_tokens: ask.max_tokens.unwrap_or(0),
            input_tokens: None,
            output_tokens: None,
            prompt_sha256: sha256_hex(&prompt_text),
            prompt_bytes: prompt_text.len(),
            answer_sha256: None,
            answer_bytes: 0,
            prompt: contents.then_some(prompt),
            answer: None,
        };
        let outcome = match self.admit(function, &ask) {
            Err(error) => Err(Failure { via: "none", error }),
            Ok(max_tokens) => {
                record.max_tokens = max_tokens;
                self.send(function, &ask, max_tokens, cancel).await
            }
        };
        record.duration_ms = millis(started.elapsed().as_secs_f64() * 1000.0);
        let answered = match outcome {
            Ok((via, answer)) => {
                record.via = via;
                record.outcome = "ok";
                record.model = Some(answer.model.clone());
                record.input_tokens = answer.input_tokens;
                record.output_tokens = answer.output_tokens;
                record.answer_sha256 = Some(sha256_hex(&answer.text));
                record.answer_bytes = answer.text.len();
                record.answer = contents.then(|| answer.text.clone());
                Ok(if ask.whole {
                    json!({
                        "text": answer.text,
                        "model": answer.model,
                        "stopReason": answer.stop_reason,
                    })
                } else {
                    Value::String(answer.text)
                })
            }
            Err(Failure { via, error }) => {
                record.via = via;
                record.outcome = error.outcome();
                Err(error)
            }
        };
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(record);
        answered
    }

    /// Checks the system prompt and takes a round and the request's tokens from the budget:
    /// the tokens it may ask for, or why it is refused.
    fn admit(&self, function: &'static str, ask: &LlmAsk) -> Result<u32, LlmError> {
        let options = &self.options;
        if let Some(allowed) = &options.system_prompts {
            let permitted = ask
                .system
                .as_ref()
                .is_some_and(|system| allowed.contains(system));
            if !permitted {
                return Err(LlmError::SystemPrompt {
                    function,
                    given: ask.system.is_some(),
                    allowed: allowed.len(),
                });
            }
        }
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        if spent.rounds >= options.max_rounds {
            return Err(LlmError::Rounds {
                function,
                limit: options.max_rounds,
            });
        }
        let left = options.max_tokens.saturating_sub(spent.tokens);
        let max_tokens = match ask.max_tokens {
            Some(asked) if u64::from(asked) > left => {
                return Err(LlmError::Tokens {
                    function,
                    asked,
                    left,
                    limit: options.max_tokens,
                });
            }
            Some(asked) => asked,
            None if left == 0 => {
                return Err(LlmError::TokensSpent {
                    function,
                    limit: options.max_tokens,
                });
            }
            None => u32::try_from(left.min(u64::from(DEFAULT_MAX_TOKENS))).unwrap_or(1),
        };
        spent.rounds += 1;
        spent.tokens += u64::from(max_tokens);
        Ok(max_tokens)
    }

    /// Sends the request to the client's model, or to the provider, within the timeout.
    async fn send(
        &self,
        function: &'static str,
        ask: &LlmAsk,
        max_tokens: u32,
        cancel: CancellationToken,
    ) -> Result<(&'static str, Answer), Failure> {
        let (limit, by) = self.time_left();
        let provider = self.options.provider.as_ref();
        let always = provider.is_some_and(|provider| provider.when == LlmWhen::Always);
        let client = match &self.client {
            Some(client) if !always => client,
            _ => {
                let Some(provider) = provider else {
                    return Err(Failure {
                        via: "none",
                        error: LlmError::NoClient { function },
                    });
                };
                return provider::answer(provider, function, ask, max_tokens, limit, by, &cancel)
                    .await;
            }
        };
        match sample(client, function, ask, max_tokens, limit, by, &cancel).await {
            Ok(answer) => Ok(("sampling", answer)),
            Err(error @ LlmError::NoSampling { .. }) => match provider {
                Some(provider) => {
                    provider::answer(provider, function, ask, max_tokens, limit, by, &cancel).await
                }
                None => Err(Failure {
                    via: "sampling",
                    error,
                }),
            },
            Err(error) => Err(Failure {
                via: "sampling",
                error,
            }),
        }
    }

    /// How long the next request may take, and what limits it: `--llm-timeout-ms`, or the
    /// execution's deadline when that comes first. At the deadline the execution ends as timed
    /// out and its requests are cancelled with it; the request's own limit is then a backstop
    /// just past the deadline, so it never races the execution's timeout and wins.
    fn time_left(&self) -> (Duration, &'static str) {
        let left = self
            .deadline
            .saturating_duration_since(tokio::time::Instant::now());
        if left < self.options.timeout {
            (
                left.saturating_add(DEADLINE_BACKSTOP),
                "the execution's deadline (--timeout-ms)",
            )
        } else {
            (self.options.timeout, "--llm-timeout-ms")
        }
    }
}

/// Asks the client's model with `sampling/createMessage`, within `limit`.
async fn sample(
    client: &Arc<dyn ClientSession>,
    function: &'static str,
    ask: &LlmAsk,
    max_tokens: u32,
    limit: Duration,
    by: &'static str,
    cancel: &CancellationToken,
) -> Result<Answer, LlmError> {
    let params = sampling_params(ask, max_tokens)
        .map_err(|reason| LlmError::Sampling { function, reason })?;
    let token = cancel.child_token();
    let mut asking = client.ask(
        "toolweave",
        ForwardedRequest::Sampling(params),
        token.clone(),
    );
    let answer = tokio::select! {
        answer = &mut asking => answer,
        () = tokio::time::sleep(limit) => {
            token.cancel();
            let _ = asking.await;
            return Err(LlmError::Timeout { function, limit_ms: limit.as_millis(), by });
        }
    };
    match answer {
        Ok(ForwardedAnswer::Sampling(result)) => sampled(function, &result),
        Ok(_) => Err(LlmError::Sampling {
            function,
            reason: "it answered with another kind of result than was asked".to_owned(),
        }),
        Err(Refusal::Unsupported { .. }) => Err(LlmError::NoSampling { function }),
        Err(Refusal::CallEnded) => Err(LlmError::Cancelled { function }),
        Err(refusal) => Err(LlmError::Sampling {
            function,
            reason: refusal.to_string(),
        }),
    }
}

/// The `sampling/createMessage` params of `ask`: its messages as text, its system prompt, and
/// its model as a hint.
fn sampling_params(
    ask: &LlmAsk,
    max_tokens: u32,
) -> Result<rmcp::model::CreateMessageRequestParams, String> {
    let messages: Vec<Value> = ask
        .messages
        .iter()
        .map(|message| {
            json!({
                "role": message.role.as_str(),
                "content": {"type": "text", "text": message.text},
            })
        })
        .collect();
    let mut params = json!({ "messages": messages, "maxTokens": max_tokens });
    if let Some(system) = &ask.system {
        params["systemPrompt"] = json!(system);
    }
    if let Some(model) = &ask.model {
        params["modelPreferences"] = json!({ "hints": [{ "name": model }] });
    }
    serde_json::from_value(params).map_err(|error| format!("internal error: {error}"))
}

/// The text of a client's sampling answer.
fn sampled(
    function: &'static str,
    result: &rmcp::model::CreateMessageResult,
) -> Result<Answer, LlmError> {
    let value = serde_json::to_value(result).unwrap_or(Value::Null);
    let blocks = match &value["content"] {
        Value::Array(blocks) => blocks.clone(),
        block => vec![block.clone()],
    };
    let texts: Vec<&str> = blocks
        .iter()
        .filter(|block| block["type"] == "text")
        .filter_map(|block| block["text"].as_str())
        .collect();
    if texts.is_empty() {
        return Err(LlmError::Sampling {
            function,
            reason: "its answer has no text content".to_owned(),
        });
    }
    if result.message.role != rmcp::model::Role::Assistant {
        return Err(LlmError::Sampling {
            function,
            reason: "its answer is not the assistant's".to_owned(),
        });
    }
    Ok(Answer {
        text: texts.concat(),
        model: result.model.clone(),
        stop_reason: result.stop_reason.clone(),
        input_tokens: None,
        output_tokens: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request is limited by `--llm-timeout-ms` while the execution has longer left, and by the
    /// execution's deadline plus the backstop once that comes first, so the request's own limit
    /// never fires before the execution's timeout.
    #[tokio::test]
    async fn a_request_waits_for_the_sooner_of_its_timeout_and_the_deadline_past_it() {
        let options = Arc::new(LlmOptions {
            timeout: Duration::from_secs(60),
            ..LlmOptions::default()
        });
        let long = LlmBudget::new(options.clone(), None, Duration::from_secs(600));
        assert_eq!(
            long.time_left(),
            (Duration::from_secs(60), "--llm-timeout-ms")
        );
        let short = LlmBudget::new(options, None, Duration::from_secs(5));
        let (limit, reason) = short.time_left();
        assert_eq!(reason, "the execution's deadline (--timeout-ms)");
        // The time left (at most 5 s, less what has passed) and the backstop after it.
        assert!(limit > Duration::from_secs(5), "{limit:?}");
        assert!(
            limit <= Duration::from_secs(5) + DEADLINE_BACKSTOP,
            "{limit:?}"
        );
    }
}
