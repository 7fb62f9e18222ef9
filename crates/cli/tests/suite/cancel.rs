//! A client's `notifications/cancelled` for a running `execute_code` stops the guest and
//! abandons its in-flight upstream calls; the server keeps serving.

use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};
use toolweave_testkit::harness::{Toolweave, fixture_config};

use super::{cpu_ticks, toolweave, worker_processes};

/// Sends `execute_code` as a request the test can cancel.
async fn start_execution(
    server: &Toolweave,
    code: &str,
) -> rmcp::service::RequestHandle<rmcp::RoleClient> {
    let Value::Object(arguments) = json!({ "code": code, "language": "javascript" }) else {
        unreachable!("a literal object");
    };
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("execute_code").with_arguments(arguments),
    ));
    server
        .client()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap()
}

/// The fixture's counts of `slow` calls, asked through toolweave.
async fn slow_counts(server: &Toolweave) -> Value {
    let stats = server
        .execute("(await tools.fixture.stats({})).slow", "javascript")
        .await
        .unwrap();
    stats.value().unwrap().clone()
}

/// Waits until `check` holds for the fixture's counts, or fails after a few seconds.
async fn wait_for_counts(server: &Toolweave, check: impl Fn(&Value) -> bool, what: &str) {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let counts = slow_counts(server).await;
        if check(&counts) {
            return;
        }
        assert!(Instant::now() < until, "{what}: the counts stayed {counts}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// CPU time of everything that runs guest code for a gateway: its engine threads and its
/// worker processes.
fn guest_cpu_ticks(gateway: u32) -> u64 {
    let workers: u64 = worker_processes(gateway)
        .into_iter()
        .map(|worker| cpu_ticks(worker, ""))
        .sum();
    cpu_ticks(gateway, "toolweave-engin") + workers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_an_execution_abandons_its_upstream_calls() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &["--timeout-ms", "60000"])
        .await
        .unwrap();
    let handle = start_execution(&server, "await tools.fixture.slow({ ms: 30000 })").await;
    wait_for_counts(
        &server,
        |counts| counts["started"] == 1,
        "the slow call never started",
    )
    .await;
    handle
        .cancel(Some("the user changed their mind".into()))
        .await
        .unwrap();
    // The upstream hears of it: its call is cancelled, not left to run for 30 s.
    wait_for_counts(
        &server,
        |counts| counts["cancelled"] == 1,
        "the upstream call was not cancelled",
    )
    .await;
    assert_eq!(slow_counts(&server).await["finished"], 0);
    let after = server
        .execute("return 'still serving'", "javascript")
        .await
        .unwrap();
    assert_eq!(after.value().unwrap(), &json!("still serving"));
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_busy_guest_stops_it_in_a_worker() {
    cancelling_a_busy_guest_stops_it("worker").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_busy_guest_stops_it_in_process() {
    cancelling_a_busy_guest_stops_it("in-process").await;
}

async fn cancelling_a_busy_guest_stops_it(isolation: &str) {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(
        toolweave(),
        &config,
        &["--timeout-ms", "60000", "--isolation", isolation],
    )
    .await
    .unwrap();
    let process_id = server.process_id().unwrap();
    let handle = start_execution(&server, "while (true) {}").await;
    // Give the guest time to be spinning, then cancel it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let spinning_from = guest_cpu_ticks(process_id);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        guest_cpu_ticks(process_id) > spinning_from,
        "the guest should be using CPU before the cancel"
    );
    handle.cancel(None).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Stopped: the engine threads and workers use (next to) no CPU any more, though the 60 s
    // deadline is far away. A spinning guest would add about 50 ticks in half a second. (A
    // worker that ended takes its ticks with it: the difference saturates at 0.)
    let stopped_from = guest_cpu_ticks(process_id);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let used = guest_cpu_ticks(process_id).saturating_sub(stopped_from);
    assert!(
        used <= 5,
        "the guest's engine used {used} ticks after the cancel ({isolation})"
    );
    let after = server.execute("return 40 + 2", "javascript").await.unwrap();
    assert_eq!(after.value().unwrap(), &json!(42));
    server.stop().await.unwrap();
}
