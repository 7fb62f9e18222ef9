//! What the engine tests share: a host of canned tools that runs one program and answers its
//! calls, and a host that submits a job to a pool.

// Each test module uses its own part of this module.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolweave_sandbox::{
    CancelFlag, EngineError, EngineEvent, EngineLimits, EnginePool, ExecuteRequest, HostReply,
    HostRequest, Job, Language, LogStream, Manifest, Namespace, Outcome, THREAD_STACK_HEADROOM,
};

enum Message {
    Event(EngineEvent),
    Finished(Outcome),
}

/// Runs `request` on `pool`, answering every call with `answer`, and waits for the outcome.
pub fn run_on_pool(
    pool: &EnginePool,
    request: ExecuteRequest,
    answer: impl Fn(&HostRequest) -> Result<serde_json::Value, String>,
) -> Outcome {
    let (messages_tx, messages) = mpsc::channel();
    let events = messages_tx.clone();
    let execution = pool.submit(Job {
        request,
        emit: Box::new(move |event| {
            let _ = events.send(Message::Event(event));
        }),
        finished: Box::new(move |outcome| {
            let _ = messages_tx.send(Message::Finished(outcome));
        }),
    });
    loop {
        match messages.recv_timeout(Duration::from_secs(10)) {
            Ok(Message::Event(EngineEvent::Call(call))) => execution.reply(HostReply::Result {
                id: call.id,
                outcome: answer(&call.request),
            }),
            Ok(Message::Event(_)) => {}
            Ok(Message::Finished(outcome)) => return outcome,
            Err(error) => panic!("no outcome: {error}"),
        }
    }
}

pub fn limits() -> EngineLimits {
    EngineLimits {
        timeout: Duration::from_millis(1000),
        memory_bytes: 16 * 1024 * 1024,
        stack_bytes: 256 * 1024,
        max_log_bytes: 4096,
        max_result_bytes: 64 * 1024,
        max_tool_calls: 20,
    }
}

/// What one run produced.
pub struct Run {
    pub outcome: Outcome,
    pub logs: Vec<(LogStream, String)>,
    /// The engine's warnings, in order.
    pub warnings: Vec<String>,
    pub calls: Vec<HostRequest>,
    /// The most calls that were sent and not yet answered at one time.
    pub most_outstanding: usize,
    pub elapsed: Duration,
}

impl Run {
    pub fn value(&self) -> &Value {
        match &self.outcome.result {
            Ok(value) => value,
            Err(error) => panic!("expected a value, got {error:?}"),
        }
    }

    pub fn error(&self) -> &EngineError {
        match &self.outcome.result {
            Ok(value) => panic!("expected an error, got {value}"),
            Err(error) => error,
        }
    }

    pub fn lines(&self) -> Vec<&str> {
        self.logs.iter().map(|(_, text)| text.as_str()).collect()
    }
}

/// Runs `code` on a thread with the stack an engine thread has, against a host whose tools are
/// `t.add` (a + b), `t.slow` (answers after `ms`), `t.fail` (an error), `t.echo` (its
/// arguments), and `later.*` (a server that is not ready: echoes).
pub fn run_code(code: &str, language: Language, limits: EngineLimits, cancel: &CancelFlag) -> Run {
    let owned = code.to_owned();
    let cancel = cancel.clone();
    let (done_tx, done_rx) = mpsc::channel();
    thread::Builder::new()
        .stack_size(limits.stack_bytes + THREAD_STACK_HEADROOM)
        .spawn(move || {
            let _ = done_tx.send(run_here(&owned, language, limits, &cancel));
        })
        .unwrap_or_else(|error| panic!("cannot start a thread: {error}"));
    // An engine that does not stop must fail its test, not hang the run.
    let bound = limits.timeout.saturating_add(ENGINE_STOP_BOUND);
    match done_rx.recv_timeout(bound) {
        Ok(run) => run,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("the engine did not stop within {bound:?} of starting: {code}")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the engine thread panicked"),
    }
}

/// How long past its own timeout an engine may take to end before its test fails.
const ENGINE_STOP_BOUND: Duration = Duration::from_secs(60);

fn run_here(code: &str, language: Language, limits: EngineLimits, cancel: &CancelFlag) -> Run {
    let (replies_tx, replies_rx) = mpsc::channel();
    let mut logs = Vec::new();
    let mut warnings = Vec::new();
    let mut calls = Vec::new();
    let outstanding = Arc::new(AtomicUsize::new(0));
    let mut most_outstanding = 0usize;
    let request = ExecuteRequest {
        code: code.to_owned(),
        language,
        limits,
        manifest: Manifest {
            namespaces: vec![
                Namespace {
                    name: "t".to_owned(),
                    tools: Some(vec![
                        "add".into(),
                        "slow".into(),
                        "fail".into(),
                        "echo".into(),
                    ]),
                },
                Namespace {
                    name: "later".to_owned(),
                    tools: None,
                },
            ],
        }
        .into(),
    };
    let started = Instant::now();
    let outcome = toolweave_sandbox::execute(
        request,
        &mut |event| match event {
            EngineEvent::Started => {}
            EngineEvent::Log { stream, text } => logs.push((stream, text)),
            EngineEvent::Warning { text } => warnings.push(text),
            EngineEvent::Progress(_) => {}
            EngineEvent::Call(call) => {
                calls.push(call.request.clone());
                let now = outstanding.fetch_add(1, Ordering::SeqCst) + 1;
                most_outstanding = most_outstanding.max(now);
                let replies = replies_tx.clone();
                let outstanding = outstanding.clone();
                let answer = move |outcome| {
                    outstanding.fetch_sub(1, Ordering::SeqCst);
                    let _ = replies.send(HostReply::Result {
                        id: call.id,
                        outcome,
                    });
                };
                match call.request {
                    HostRequest::Tool { name, args, .. } => match name.as_str() {
                        "t.add" => answer(Ok(json!(
                            args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0)
                        ))),
                        "t.slow" => {
                            let ms = args["ms"].as_u64().unwrap_or(10);
                            thread::spawn(move || {
                                thread::sleep(Duration::from_millis(ms));
                                answer(Ok(json!(ms)));
                            });
                        }
                        "t.fail" => answer(Err("t.fail returned an error: broken".to_owned())),
                        "t.echo" | "mcp__t__echo" => answer(Ok(args)),
                        other if other.starts_with("later.") => answer(Ok(args)),
                        other => answer(Err(format!("unknown tool \"{other}\""))),
                    },
                    HostRequest::Search { query, limit } => answer(Ok(
                        json!([{ "name": "t.add", "query": query, "limit": limit }]),
                    )),
                    HostRequest::Describe { names } => answer(Ok(json!({ "names": names }))),
                    HostRequest::Server { server, ask } => {
                        answer(Ok(json!({ "server": server, "method": ask.method() })));
                    }
                    HostRequest::Session(ask) => {
                        answer(Ok(json!({ "session": ask.function() })));
                    }
                    HostRequest::Emit { .. } => answer(Ok(json!(null))),
                    HostRequest::Llm(ask) => {
                        answer(Ok(json!({ "llm": ask.messages.len(), "whole": ask.whole })));
                    }
                }
            }
        },
        &replies_rx,
        cancel,
    );
    Run {
        outcome,
        logs,
        warnings,
        calls,
        most_outstanding,
        elapsed: started.elapsed(),
    }
}
