//! How toolweave's cost grows with the work: the size of the catalog, the number of servers, the
//! size of a tool result, and what executions hold in memory.
//!
//! `cargo bench -p toolweave --bench gateway -- scale` (release profile; `cargo build --release` first), or
//! one part: `-- scale tools`, `-- scale servers`, `-- scale results`, `-- scale memory`. Everything runs the real binary
//! over stdio with an rmcp client, and the fixture server as upstream (`--tools N` for synthetic
//! catalogs). Sessions over HTTP are the `http` bench's.
//!
//! - tools: one server of 10, 100, 1,000 and 10,000 tools, in worker processes and in process:
//!   spawn → first `search_tools` answered, then medians of an execution making one call, a
//!   search and a describe (measured interleaved), and the gateway's RSS; the eight gateways
//!   run side by side and take turns in blocks of 20 rounds, so every size meets the machine's
//!   drift alike;
//! - servers: 1, 10 and 50 fixture servers: spawn → `initialize` answered, and until every server
//!   has answered one call from code; the gateway's RSS;
//! - results: a tool result of 1 KB, 1 MB and 50 MB read by code (its length returned): time,
//!   and the gateway's peak RSS (a fresh gateway per size);
//! - memory: the gateway idle, each waiting worker (Pss), and each running execution (20 waiting
//!   on a timer at once).
//!
//! `TOOLWEAVE_BENCH_BINARY=/path/to/toolweave` measures another build of the binary (A/B).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Map, Value, json};
use toolweave_testkit::harness::workers_with_kinds;

use crate::{binary, proportional_kib};

/// Timed rounds per catalog size (each an execution, a search and a describe).
const ROUNDS: usize = 200;
/// What the timed searches look for, in turn.
const QUERIES: [&str; 3] = ["list files", "billing projects", "users in billing"];
/// Gateways started per catalog size to time the first search.
const STARTS: usize = 5;
/// Executions running at once for the memory each one holds.
const RUNNING: usize = 20;

type Client = RunningService<RoleClient, ()>;

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Writes a config of `servers` (name → fixture arguments) and returns its path.
fn config(dir: &Path, name: &str, servers: &[(String, Vec<String>)]) -> PathBuf {
    let fixture = binary("toolweave-fixture");
    let servers: Map<String, Value> = servers
        .iter()
        .map(|(name, args)| (name.clone(), json!({ "command": fixture, "args": args })))
        .collect();
    let path = dir.join(name);
    std::fs::write(
        &path,
        serde_json::to_vec(&json!({ "mcpServers": servers })).expect("json"),
    )
    .expect("write config");
    path
}

/// Starts `toolweave serve` on `config` with `extra` flags; returns the client (once
/// `initialize` is answered) and the gateway's process id.
async fn start(config: &Path, extra: &[&str]) -> (Client, u32) {
    let command = tokio::process::Command::new(binary("toolweave")).configure(|command| {
        command
            .arg("serve")
            .arg("--config")
            .arg(config)
            .args(extra)
            .env("TOOLWEAVE_LOG", "warn")
            .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home());
    });
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let process_id = transport.id().expect("process id");
    let client = ().serve(transport).await.expect("initialize");
    (client, process_id)
}

async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .expect("call");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result
}

async fn execute(client: &Client, code: &str) -> CallToolResult {
    call(client, "execute_code", json!({ "code": code })).await
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
pub async fn main() {
    // After the benchmark's name (`gateway -- scale [PART...]`).
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let parts: Vec<&str> = arguments
        .iter()
        .map(String::as_str)
        .filter(|argument| !argument.starts_with('-'))
        .skip(1)
        .collect();
    let wanted = |part: &str| parts.is_empty() || parts.contains(&part);
    let dir = tempfile::tempdir().expect("temp dir");
    if wanted("tools") {
        tools(dir.path()).await;
    }
    if wanted("servers") {
        servers(dir.path()).await;
    }
    if wanted("results") {
        results(dir.path()).await;
    }
    if wanted("memory") {
        memory(dir.path()).await;
    }
}

async fn tools(dir: &Path) {
    println!("catalog size: one server of N synthetic tools (medians)");
    let mut gateways = Vec::new();
    for count in [10, 100, 1_000, 10_000] {
        let config = config(
            dir,
            &format!("tools-{count}.json"),
            &[(
                "catalog".to_owned(),
                vec!["--tools".to_owned(), count.to_string()],
            )],
        );
        for isolation in ["worker", "in-process"] {
            let mut first_search = Vec::new();
            for _ in 0..STARTS {
                let spawned = Instant::now();
                let (client, _) = start(&config, &["--isolation", isolation]).await;
                let result = call(
                    &client,
                    "search_tools",
                    json!({ "query": "list billing items" }),
                )
                .await;
                first_search.push(spawned.elapsed());
                let hits = result.structured_content.expect("structured")["results"]
                    .as_array()
                    .map_or(0, Vec::len);
                assert!(hits > 0, "the first search found nothing at {count} tools");
                client.cancel().await.expect("close");
            }
            let (client, gateway) = start(&config, &["--isolation", isolation]).await;
            for _ in 0..20 {
                execute(&client, ONE_CALL).await;
                call(&client, "search_tools", json!({ "query": "billing teams" })).await;
            }
            gateways.push(Timed {
                count,
                isolation,
                client,
                gateway,
                first_search: median(first_search),
                executions: Vec::new(),
                searches: Vec::new(),
                describes: Vec::new(),
            });
        }
    }
    // Every gateway is timed in blocks, the blocks interleaved, so a drift in the machine's state
    // (which moves a worker execution by a third from one minute to the next) touches every
    // catalog size alike; the pause lets the last gateway's replacement workers finish starting.
    for block in 0..ROUNDS / BLOCK {
        for timed in &mut gateways {
            tokio::time::sleep(Duration::from_millis(100)).await;
            for round in 0..BLOCK {
                timed.round(block * BLOCK + round).await;
            }
        }
    }
    for timed in gateways {
        println!(
            "{:>6} tools, {:<10}  first search after spawn {:>7.1} ms   execution with one call {:>6.2} ms   search {:>6.2} ms   describe {:>6.2} ms   gateway RSS {:>6} KiB",
            timed.count,
            timed.isolation,
            ms(timed.first_search),
            ms(median(timed.executions)),
            ms(median(timed.searches)),
            ms(median(timed.describes)),
            crate::status_kib(timed.gateway, "VmRSS:")
        );
        timed.client.cancel().await.expect("close");
    }
}

/// The program each timed execution runs: one call.
const ONE_CALL: &str = "return (await tools.catalog.billing_list_items({ limit: 1 })).tool";

/// Timed rounds in a row on one gateway before the next one's turn.
const BLOCK: usize = 20;

/// One gateway of the catalog-size part and what was timed on it.
struct Timed {
    count: usize,
    isolation: &'static str,
    client: Client,
    gateway: u32,
    first_search: Duration,
    executions: Vec<Duration>,
    searches: Vec<Duration>,
    describes: Vec<Duration>,
}

impl Timed {
    /// One round: an execution making one call, a search and a describe, each timed.
    async fn round(&mut self, round: usize) {
        let started = Instant::now();
        execute(&self.client, ONE_CALL).await;
        self.executions.push(started.elapsed());
        let started = Instant::now();
        call(
            &self.client,
            "search_tools",
            json!({ "query": QUERIES[round % QUERIES.len()] }),
        )
        .await;
        self.searches.push(started.elapsed());
        let started = Instant::now();
        call(
            &self.client,
            "describe_tools",
            json!({ "names": ["catalog.billing_list_files"] }),
        )
        .await;
        self.describes.push(started.elapsed());
    }
}

async fn servers(dir: &Path) {
    println!("servers: N fixture servers of 16 tools (medians of 5 starts)");
    for count in [1, 10, 50] {
        let servers: Vec<(String, Vec<String>)> = (0..count)
            .map(|index| {
                let name = format!("s{index}");
                (name.clone(), vec!["--name".to_owned(), name])
            })
            .collect();
        let config = config(dir, &format!("servers-{count}.json"), &servers);
        let every_server = format!(
            "return (await Promise.all([{}].map((name) => tools[name].whoami({{}})))).length",
            servers
                .iter()
                .map(|(name, _)| format!("\"{name}\""))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let (mut initialized, mut all_ready, mut resident) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..5 {
            let spawned = Instant::now();
            let (client, gateway) = start(&config, &[]).await;
            initialized.push(spawned.elapsed());
            let result = execute(&client, &every_server).await;
            all_ready.push(spawned.elapsed());
            let value = result.structured_content.expect("structured")["result"].clone();
            assert_eq!(value, json!(count), "not every server answered");
            resident.push(crate::status_kib(gateway, "VmRSS:"));
            client.cancel().await.expect("close");
        }
        resident.sort_unstable();
        println!(
            "{count:>3} servers: initialize answered {:>6.1} ms after spawn   every server answered a call {:>7.1} ms after spawn   gateway RSS {:>6} KiB",
            ms(median(initialized)),
            ms(median(all_ready)),
            resident[resident.len() / 2]
        );
    }
}

async fn results(dir: &Path) {
    println!(
        "tool results read by code: the fixture's `large` tool, the length returned (medians of 5)"
    );
    let config = config(
        dir,
        "results.json",
        &[(
            "fixture".to_owned(),
            vec!["--name".to_owned(), "fixture".to_owned()],
        )],
    );
    for (label, bytes) in [("1 KB", 1_000), ("1 MB", 1_000_000), ("50 MB", 50_000_000)] {
        for isolation in ["worker", "in-process"] {
            let (client, gateway) = start(
                &config,
                &[
                    "--isolation",
                    isolation,
                    "--memory-mb",
                    "256",
                    "--timeout-ms",
                    "120000",
                ],
            )
            .await;
            let code = format!("return (await tools.fixture.large({{ bytes: {bytes} }})).length");
            let mut took = Vec::new();
            for _ in 0..5 {
                let started = Instant::now();
                let result = execute(&client, &code).await;
                took.push(started.elapsed());
                let value = result.structured_content.expect("structured")["result"].clone();
                assert_eq!(value, json!(bytes));
            }
            println!(
                "{label:>6}, {isolation:<10}  {:>8.1} ms   gateway peak RSS {:>7} KiB",
                ms(median(took)),
                crate::status_kib(gateway, "VmHWM:")
            );
            client.cancel().await.expect("close");
        }
    }
}

async fn memory(dir: &Path) {
    println!("memory");
    let config = config(
        dir,
        "memory.json",
        &[(
            "fixture".to_owned(),
            vec!["--name".to_owned(), "fixture".to_owned()],
        )],
    );
    for isolation in ["worker", "in-process"] {
        let (client, gateway) = start(&config, &["--isolation", isolation]).await;
        for _ in 0..20 {
            execute(&client, "return await tools.fixture.add({ a: 1, b: 2 })").await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let idle = crate::status_kib(gateway, "VmRSS:");
        let waiting: Vec<(u32, String)> = workers_with_kinds(gateway);
        let waiting_pss: u64 = waiting.iter().map(|(pid, _)| proportional_kib(*pid)).sum();
        println!(
            "{isolation:<10}  gateway idle {idle} KiB VmRSS   {} waiting workers, {} KiB Pss each",
            waiting.len(),
            waiting_pss.checked_div(waiting.len() as u64).unwrap_or(0)
        );
        // Executions that wait on a timer hold what a running execution holds while they wait.
        let peer = client.peer().clone();
        let running: Vec<_> = (0..RUNNING)
            .map(|_| {
                let peer = peer.clone();
                tokio::spawn(async move {
                    let Value::Object(arguments) = json!({
                        "code": "await new Promise((resolve) => setTimeout(resolve, 3000)); return 1"
                    }) else {
                        unreachable!("an object literal");
                    };
                    peer.call_tool(
                        CallToolRequestParams::new("execute_code").with_arguments(arguments),
                    )
                    .await
                    .expect("call")
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let busy = crate::status_kib(gateway, "VmRSS:");
        let workers = workers_with_kinds(gateway);
        let workers_pss: u64 = workers.iter().map(|(pid, _)| proportional_kib(*pid)).sum();
        println!(
            "{isolation:<10}  {RUNNING} executions running: gateway {busy} KiB VmRSS (+{:.0} KiB each), {} workers {} KiB Pss in all (+{:.0} KiB each over the waiting ones)",
            busy.saturating_sub(idle) as f64 / RUNNING as f64,
            workers.len(),
            workers_pss,
            workers_pss.saturating_sub(waiting_pss) as f64 / RUNNING as f64,
        );
        for task in running {
            task.await.expect("execution");
        }
        client.cancel().await.expect("close");
    }
}
