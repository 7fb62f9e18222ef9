//! Many executions at once, each hitting a limit: every one is answered with its limit, another
//! client's tool calls meanwhile either succeed or, when they time out, say that toolweave was
//! busy rather than blame the server, and the gateway answers the next request after.
//!
//! The probe's stall bound does not apply here: sixty executions spinning on two cores is the
//! machine saturated on purpose, and what is checked is that nothing is lost or misreported.

use std::time::Duration;

use futures::future::join_all;
use serde_json::json;
use toolweave_testkit::harness::fixture_config;

use super::gateway::Gateway;
use super::serial;

/// Executions started together, spread over sessions as clients would send them.
const EXECUTIONS: usize = 60;
const SESSIONS: usize = 6;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_executions_at_their_limits_in_workers() {
    saturated("worker").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_executions_at_their_limits_in_process() {
    saturated("in-process").await;
}

async fn saturated(isolation: &str) {
    let _serial = serial().await;
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let mut gateway = Gateway::start(
        &config,
        isolation,
        &["--timeout-ms", "1500", "--tool-timeout-ms", "2000"],
    )
    .await;
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(gateway.http.connect(None).await.unwrap());
    }
    let spinning = (0..EXECUTIONS).map(|index| {
        let session = &sessions[index % SESSIONS];
        let language = if index % 3 == 2 {
            "python"
        } else {
            "javascript"
        };
        let code = match language {
            "python" => "while True:\n    pass",
            _ => "while (true) {}",
        };
        async move { session.execute(code, language).await }
    });
    // Meanwhile another client calls a tool, again and again.
    let calls = async {
        let mut outcomes = Vec::new();
        for _ in 0..10 {
            let execution = gateway
                .session
                .execute(
                    "return await tools.fixture.add({ a: 2, b: 3 })",
                    "javascript",
                )
                .await;
            outcomes.push(execution);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        outcomes
    };
    let (answers, outcomes) = tokio::join!(join_all(spinning), calls);
    let mut failures = Vec::new();
    for (index, answer) in answers.into_iter().enumerate() {
        match answer {
            Ok(execution) if execution.error_kind() == Some("Timeout") => {}
            Ok(execution) => failures.push(format!("execution {index}: {}", execution.text)),
            Err(error) => failures.push(format!("execution {index}: no answer: {error:#}")),
        }
    }
    for execution in outcomes {
        let execution = match execution {
            Ok(execution) => execution,
            Err(error) => {
                failures.push(format!("a tool call meanwhile: no answer: {error:#}"));
                continue;
            }
        };
        // Answered; or its tool call timed out with the time put where it went, in toolweave; or
        // the execution itself ran out of time, sharing two cores with sixty busy loops (in
        // process, it may also wait for an engine thread once the address space holds no more).
        // Never an error that blames the server.
        let fine = execution.value().ok() == Some(&json!("5"))
            || execution.text.contains("most of it spent in toolweave")
            || (execution.error_kind() == Some("Timeout")
                && execution
                    .text
                    .starts_with("Timeout: the execution ran longer than"));
        if !fine {
            failures.push(format!("a tool call meanwhile: {}", execution.text));
        }
    }
    failures.extend(gateway.serving_problems("javascript").await);
    failures.extend(gateway.serving_problems("python").await);
    assert!(
        failures.is_empty(),
        "{}\nthe gateway's log ends:\n{}",
        failures.join("\n"),
        super::gateway::tail(&gateway.http.stderr())
    );
}
