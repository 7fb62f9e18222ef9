//! A gateway for the corpus: `toolweave serve --http` under the address-space limit, a session
//! for the cases and another for the probe.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Map, Value, json};
use toolweave_testkit::harness::{Execution, Toolweave};
use toolweave_testkit::http::HttpToolweave;

use super::probe::{Probe, ProbeCall, Probed, at_rest};
use super::toolweave;

/// The gateway's address space: no request a guest or a client can make may need more.
pub const ADDRESS_SPACE: u64 = 2 << 30;
/// How soon after a case the gateway must answer the next request.
pub const NEXT_ANSWER_BOUND: Duration = Duration::from_secs(3);

/// A running gateway with a session for cases and one for the probe.
pub struct Gateway {
    pub http: HttpToolweave,
    /// The session cases run in.
    pub session: Toolweave,
    probe: ProbeCall,
    /// How long a probe execution takes at rest.
    pub rest: Duration,
    /// How much longer than at rest a probe execution may take while a case runs.
    pub stall_bound: Duration,
}

impl Gateway {
    /// Starts `toolweave serve --http --config config --isolation isolation <extra>` under the
    /// address-space limit, with both sessions.
    pub async fn start(config: &Path, isolation: &str, extra: &[&str]) -> Self {
        let mut arguments = vec!["--isolation", isolation];
        arguments.extend_from_slice(extra);
        let http =
            HttpToolweave::start_limited(toolweave(), ADDRESS_SPACE, config, &arguments, &[])
                .await
                .unwrap_or_else(|error| panic!("the gateway did not start: {error:#}"));
        let session = http.connect(None).await.unwrap();
        let prober = Arc::new(http.connect(None).await.unwrap());
        let probe: ProbeCall = Arc::new(move || {
            let prober = prober.clone();
            async move {
                let execution = prober
                    .execute("return 1", "javascript")
                    .await
                    .map_err(|error| format!("{error:#}"))?;
                match execution.value() {
                    Ok(value) if value == &json!(1) => Ok(()),
                    _ => Err(execution.text),
                }
            }
            .boxed()
        });
        let rest = at_rest(&probe).await;
        Self {
            stall_bound: super::probe::STALL_BOUND,
            http,
            session,
            probe,
            rest,
        }
    }

    /// Starts the probe.
    pub fn probe(&self) -> Probe {
        Probe::start(self.probe.clone())
    }

    /// Runs `code` in the case session with the probe running; the execution (or why there is
    /// none) and what the probe saw.
    pub async fn execute_probed(
        &self,
        code: &str,
        language: &str,
    ) -> (Result<Execution, String>, Probed) {
        let probe = self.probe();
        let execution = self
            .session
            .execute(code, language)
            .await
            .map_err(|error| format!("no answer: {error:#}"));
        (execution, probe.finish().await)
    }

    /// Calls MCP tool `tool` in the case session with the probe running.
    pub async fn call_probed(
        &self,
        tool: &str,
        arguments: Value,
    ) -> (Result<rmcp::model::CallToolResult, String>, Probed) {
        let probe = self.probe();
        let Value::Object(arguments) = arguments else {
            panic!("arguments must be an object");
        };
        let called = self
            .session
            .client()
            .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
            .await
            .map_err(|error| format!("no answer: {error:#}"));
        (called, probe.finish().await)
    }

    /// Runs case `case` with the probe running: what is wrong with its outcome, with the other
    /// client's executions meanwhile, and with the gateway after it (empty when all is well).
    ///
    /// A stall counts when it repeats: the case runs once more when its only problem is a slow
    /// probe. A stall the gateway causes (work on its runtime's threads, a lock held across a
    /// case) comes back every run; one a busy machine causes (the core taken for a moment by
    /// another process) seldom does.
    pub async fn case_problems(&mut self, case: &toolweave_testkit::cases::Case) -> Vec<String> {
        let (execution, probed) = self.execute_probed(&case.code, case.language).await;
        let mut problems = match &execution {
            Ok(execution) => case.problems(execution),
            Err(why) => vec![why.clone()],
        };
        problems.extend(probed.failures());
        let mut stall = probed.stall(self.rest, self.stall_bound);
        if let Some(first) = stall.take_if(|_| problems.is_empty()) {
            let (_, again) = self.execute_probed(&case.code, case.language).await;
            problems.extend(again.failures());
            stall = again
                .stall(self.rest, self.stall_bound)
                .map(|second| format!("{first}; run again: {second}"));
        }
        problems.extend(stall);
        problems.extend(self.serving_problems(case.language).await);
        problems
    }

    /// Problems with the gateway after a case: it must still be running and answer an
    /// execution within [`NEXT_ANSWER_BOUND`], in `language`.
    pub async fn serving_problems(&mut self, language: &str) -> Vec<String> {
        let mut problems = Vec::new();
        if let Ok(Some(status)) = self.http.try_wait() {
            problems.push(format!(
                "the gateway exited ({status}); its log ends:\n{}",
                tail(&self.http.stderr())
            ));
            return problems;
        }
        let next = match language {
            "python" => "'still serving'",
            _ => "return 'still serving'",
        };
        let started = Instant::now();
        match tokio::time::timeout(NEXT_ANSWER_BOUND, self.session.execute(next, language)).await {
            Err(_) => problems.push(format!(
                "the next execution was not answered within {NEXT_ANSWER_BOUND:?}"
            )),
            Ok(Err(error)) => problems.push(format!("the next execution failed: {error:#}")),
            Ok(Ok(after)) if after.value().ok() != Some(&json!("still serving")) => {
                problems.push(format!("the next execution failed: {}", after.text));
            }
            Ok(Ok(_)) => {}
        }
        let took = started.elapsed();
        if took > NEXT_ANSWER_BOUND {
            problems.push(format!("the next execution took {took:?}"));
        }
        problems
    }
}

/// The last lines of a log, for a failure message.
pub fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// A config file naming `servers` (name → entry), in `dir`.
pub fn write_config(dir: &Path, servers: Map<String, Value>) -> std::path::PathBuf {
    let path = dir.join("mcp.json");
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&json!({ "mcpServers": servers })).unwrap(),
    )
    .unwrap();
    path
}
