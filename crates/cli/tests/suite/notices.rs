//! An upstream server's progress and log notifications about a call made by an execution reach
//! the client that ran it: progress as progress of its `execute_code` request, log messages
//! at or above the level it set.

#![allow(deprecated)] // MCP logging (`notifications/message`, `logging/setLevel`).

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken, ServerResult,
    SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use toolweave_testkit::harness::{fixture_config, serve_with};
use toolweave_testkit::http::HttpToolweave;

use super::toolweave;

/// A client that keeps every progress and log notification it receives.
#[derive(Clone, Default)]
struct Listening {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    logs: Arc<Mutex<Vec<LoggingMessageNotificationParam>>>,
}

impl ClientHandler for Listening {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs.lock().unwrap().push(params);
    }
}

/// Runs `code` (the MCP client sends a progress token with every request); the execution's
/// value and the token.
async fn execute_with_progress(
    client: &RunningService<RoleClient, Listening>,
    code: &str,
) -> (Value, ProgressToken) {
    let Value::Object(arguments) = json!({ "code": code, "language": "javascript" }) else {
        unreachable!("a literal object");
    };
    let params = CallToolRequestParams::new("execute_code").with_arguments(arguments);
    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    let token = handle.progress_token.clone();
    let ServerResult::CallToolResult(result) = handle.await_response().await.unwrap() else {
        panic!("not a tool result");
    };
    assert_ne!(result.is_error, Some(true), "{result:?}");
    (result.structured_content.unwrap()["result"].clone(), token)
}

/// The progress messages for `token` once `expected` of them have arrived (or 2 s passed), in
/// the order of their progress values. The client hands each notification to a task of its own,
/// so one sent before the answer may be recorded just after the call returns, and two sent in
/// order may be recorded the other way round.
async fn progress_messages(
    listening: &Listening,
    token: &ProgressToken,
    expected: usize,
) -> Vec<(f64, String)> {
    let collect = || -> Vec<(f64, String)> {
        listening
            .progress
            .lock()
            .unwrap()
            .iter()
            .filter(|p| &p.progress_token == token)
            .map(|p| (p.progress, p.message.clone().unwrap_or_default()))
            .collect()
    };
    let sorted = |mut messages: Vec<(f64, String)>| {
        messages.sort_by(|a, b| a.0.total_cmp(&b.0));
        messages
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while collect().len() < expected && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    sorted(collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_and_logs_of_upstream_calls_reach_the_client_over_stdio() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let listening = Listening::default();
    let (client, _) = serve_with(toolweave(), &config, &[], &[], listening.clone())
        .await
        .unwrap();

    let (value, token) = execute_with_progress(
        &client,
        "const a = await tools.fixture.slow({ ms: 30 }); const b = await tools.fixture.slow({ ms: 20 }); return [a, b]",
    )
    .await;
    assert_eq!(value, json!(["done", "done"]));
    // Two calls, each 1/2 then 2/2, as one count that only rises.
    assert_eq!(
        progress_messages(&listening, &token, 4).await,
        vec![
            (1.0, "fixture.slow: 1/2 waiting".to_owned()),
            (2.0, "fixture.slow: 2/2 done".to_owned()),
            (3.0, "fixture.slow: 1/2 waiting".to_owned()),
            (4.0, "fixture.slow: 2/2 done".to_owned()),
        ]
    );
    let logs: Vec<(String, Value)> = listening
        .logs
        .lock()
        .unwrap()
        .iter()
        .map(|log| (log.logger.clone().unwrap_or_default(), log.data.clone()))
        .collect();
    assert_eq!(
        logs,
        vec![
            (
                "toolweave/fixture/slow".to_owned(),
                json!("slow: waiting 30 ms")
            ),
            (
                "toolweave/fixture/slow".to_owned(),
                json!("slow: waiting 20 ms")
            ),
        ]
    );

    // Above the level the client set, and only there.
    client
        .peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Warning))
        .await
        .unwrap();
    let (value, token) =
        execute_with_progress(&client, "return await tools.fixture.slow({ ms: 10 })").await;
    assert_eq!(value, json!("done"));
    assert_eq!(progress_messages(&listening, &token, 2).await.len(), 2);
    assert_eq!(
        listening.logs.lock().unwrap().len(),
        2,
        "an info message passed a warning level"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_each_session_gets_its_own_progress() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = HttpToolweave::start(toolweave(), &config, &[], &[])
        .await
        .unwrap();
    let connect = || async {
        let listening = Listening::default();
        let transport = StreamableHttpClientTransport::with_client(
            toolweave_testkit::http::client(),
            StreamableHttpClientTransportConfig::with_uri(server.url()),
        );
        let client = listening.clone().serve(transport).await.unwrap();
        (listening, client)
    };
    let (first, first_client) = connect().await;
    let (second, second_client) = connect().await;
    let code = "return await tools.fixture.slow({ ms: 200 })";
    let ((a, first_token), (b, second_token)) = tokio::join!(
        execute_with_progress(&first_client, code),
        execute_with_progress(&second_client, code),
    );
    assert_eq!((a, b), (json!("done"), json!("done")));
    for (listening, mine) in [(&first, &first_token), (&second, &second_token)] {
        assert_eq!(
            progress_messages(listening, mine, 2).await,
            vec![
                (1.0, "fixture.slow: 1/2 waiting".to_owned()),
                (2.0, "fixture.slow: 2/2 done".to_owned()),
            ]
        );
        assert_eq!(
            listening.progress.lock().unwrap().len(),
            2,
            "a session saw progress of another's execution"
        );
    }
}
