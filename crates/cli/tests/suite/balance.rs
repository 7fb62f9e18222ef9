//! More than one copy behind a load balancer: HAProxy (Debian's `haproxy`, with the config in
//! `deploy/haproxy/haproxy.cfg`) or nginx (`deploy/nginx/toolweave.conf`, the copies naming
//! themselves in their session ids) in front of three `toolweave serve --http` on loopback. 64
//! clients each keep a session on the copy that opened it; one copy stopped with SIGTERM drains
//! without losing an answered request, and its clients' new sessions go to the other copies.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolweave_testkit::harness::fixture_config;
use toolweave_testkit::http::HttpToolweave;

use super::{repo_root, toolweave, which};

const COPIES: usize = 3;
const CLIENTS: usize = 64;
const ROUNDS: usize = 30;
/// The copy stopped partway.
const STOPPED: usize = 1;
/// The response header the test adds to HAProxy's config: which copy answered.
const COPY_HEADER: &str = "x-toolweave-copy";
/// The balancer's own output and error log, in the test's directory.
const LOG: &str = "balancer.log";

/// The balancers the repository has a config for.
#[derive(Debug, Clone, Copy)]
pub(super) enum Balancer {
    /// Pins sessions with a stick table filled from each `initialize` answer.
    HaProxy,
    /// Round-robin, no pinning: the copies share their state (`--state`).
    HaProxyShared,
    /// Pins sessions by the copy's name at the start of their ids.
    Nginx,
}

impl Balancer {
    fn program(self) -> &'static str {
        match self {
            Self::HaProxy | Self::HaProxyShared => "haproxy",
            Self::Nginx => "nginx",
        }
    }

    /// The arguments that make copy `index` what this balancer expects.
    fn copy_arguments(self, index: usize) -> Vec<String> {
        match self {
            Self::HaProxy | Self::HaProxyShared => Vec::new(),
            Self::Nginx => vec!["--session-id-prefix".to_owned(), copy_name(index)],
        }
    }

    /// Starts it on `port` in front of `copies`, configured in `dir`.
    fn start(
        self,
        program: &Path,
        dir: &Path,
        port: u16,
        copies: &[SocketAddr],
    ) -> tokio::process::Child {
        let mut command = tokio::process::Command::new(program);
        match self {
            Self::HaProxy | Self::HaProxyShared => {
                let config = dir.join("haproxy.cfg");
                let documented = match self {
                    Self::HaProxyShared => "deploy/haproxy/haproxy-state.cfg",
                    _ => "deploy/haproxy/haproxy.cfg",
                };
                std::fs::write(&config, haproxy_config(documented, port, copies)).unwrap();
                command.arg("-db").arg("-f").arg(&config);
            }
            Self::Nginx => {
                let config = dir.join("nginx.conf");
                std::fs::write(&config, nginx_config(dir, port, copies)).unwrap();
                command.arg("-p").arg(dir).arg("-c").arg(&config);
            }
        }
        // Whatever it says goes to `log`, which a failure quotes.
        let log = std::fs::File::create(dir.join(LOG)).unwrap();
        command
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    }
}

/// How the configs name copy `index` (from 0): `copy1`, `copy2`, ...
fn copy_name(index: usize) -> String {
    format!("copy{}", index + 1)
}

/// The repository's HAProxy config, listening on `port`, with `copies` as its servers and a
/// header naming the copy that answered.
fn haproxy_config(documented: &str, port: u16, copies: &[SocketAddr]) -> String {
    let documented = std::fs::read_to_string(repo_root().join(documented)).unwrap();
    let mut config = String::new();
    for line in documented.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("bind ") {
            config.push_str(&format!("    bind 127.0.0.1:{port}\n"));
        } else if trimmed.starts_with("server ") {
            continue;
        } else {
            config.push_str(line);
            config.push('\n');
        }
    }
    config.push_str("    http-response set-header X-Toolweave-Copy %s\n");
    for (index, address) in copies.iter().enumerate() {
        config.push_str(&format!("    server {} {address}\n", copy_name(index)));
    }
    config
}

/// The repository's nginx config, listening on `port` with `copies` for its three servers and a
/// header naming the address that answered, in a whole nginx.conf kept in `dir`. One process (no
/// master): the test ends it by killing the process it started, which leaves no worker behind.
fn nginx_config(dir: &Path, port: u16, copies: &[SocketAddr]) -> String {
    let mut documented =
        std::fs::read_to_string(repo_root().join("deploy/nginx/toolweave.conf")).unwrap();
    for (index, address) in copies.iter().enumerate() {
        documented =
            documented.replace(&format!("10.0.0.1{}:8080", index + 1), &address.to_string());
    }
    documented = documented.replace(
        "    listen 8080;",
        &format!(
            "    listen 127.0.0.1:{port};\n    add_header X-Toolweave-Copy $upstream_addr always;"
        ),
    );
    let dir = dir.display();
    format!(
        "user root;\ndaemon off;\nmaster_process off;\npid {dir}/nginx.pid;\nerror_log {dir}/{LOG} warn;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {dir}/body;\n  proxy_temp_path {dir}/proxy;\n\
         fastcgi_temp_path {dir}/fastcgi;\n  uwsgi_temp_path {dir}/uwsgi;\n  scgi_temp_path {dir}/scgi;\n{documented}\n}}\n"
    )
}

/// What one request through the balancer came to.
enum Failure {
    /// `404`: the session is not known where the request went (its copy is gone).
    SessionGone,
    /// Anything else: a failure the drain should never cause.
    Other(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::SessionGone => f.write_str("404: session gone"),
            Self::Other(what) => f.write_str(what),
        }
    }
}

/// One MCP client over raw HTTP, through the balancer.
struct Client {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
    /// The copy that opened the session.
    copy: String,
    next_id: u64,
    /// Copy names by address, for a balancer that names the address that answered.
    names: Arc<HashMap<String, String>>,
}

impl Client {
    /// POSTs one JSON-RPC message; the copy that answered and, for a request, its answer.
    async fn post(&mut self, message: Value) -> Result<(String, Option<Value>), Failure> {
        let id = message.get("id").cloned();
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .body(message.to_string());
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        let response = request
            .send()
            .await
            .map_err(|error| Failure::Other(format!("send: {error}")))?;
        let status = response.status().as_u16();
        let copy = response
            .headers()
            .get(COPY_HEADER)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        // nginx names every address it tried; the last one answered.
        let copy = copy.rsplit(", ").next().unwrap_or_default();
        let copy = self
            .names
            .get(copy)
            .cloned()
            .unwrap_or_else(|| copy.to_owned());
        if let Some(session) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
        {
            self.session = Some(session.to_owned());
        }
        let body = response
            .text()
            .await
            .map_err(|error| Failure::Other(format!("body: {error}")))?;
        match status {
            200 | 202 => {}
            404 => return Err(Failure::SessionGone),
            status => return Err(Failure::Other(format!("{status} from {copy}: {body}"))),
        }
        let Some(id) = id else {
            return Ok((copy, None));
        };
        let answer = body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|message| message.get("id") == Some(&id));
        match answer {
            Some(answer) => Ok((copy, Some(answer))),
            None => Err(Failure::Other(format!("no answer from {copy} in: {body}"))),
        }
    }

    /// Opens a session; the copy that took it.
    async fn initialize(&mut self) -> Result<String, Failure> {
        self.session = None;
        let (copy, _) = self
            .post(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "balanced", "version": "0"}}}),
            )
            .await?;
        self.post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        self.copy = copy.clone();
        Ok(copy)
    }

    /// Runs `code` in this session; its value and the copy that answered.
    async fn execute(&mut self, code: &str) -> Result<(Value, String), Failure> {
        self.next_id += 1;
        let (copy, answer) = self
            .post(
                json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                "params": {"name": "execute_code", "arguments": {"code": code}}}),
            )
            .await?;
        let answer = answer.unwrap_or_default();
        let value = answer["result"]["structuredContent"]["result"].clone();
        if value.is_null() {
            return Err(Failure::Other(format!("{copy} answered {answer}")));
        }
        Ok((value, copy))
    }
}

/// What the clients saw, together.
#[derive(Default)]
struct Tally {
    latencies: std::sync::Mutex<Vec<(Instant, Duration)>>,
    failures: std::sync::Mutex<Vec<String>>,
    moved: AtomicUsize,
    completed: AtomicUsize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_copies_behind_haproxy_keep_sessions_and_drain_one() {
    three_copies_keep_sessions_and_drain_one(Balancer::HaProxy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_copies_behind_nginx_keep_sessions_and_drain_one() {
    three_copies_keep_sessions_and_drain_one(Balancer::Nginx).await;
}

async fn three_copies_keep_sessions_and_drain_one(balancer: Balancer) {
    let test = format!("three copies behind {balancer:?}");
    let Some(program) = which(balancer.program()) else {
        toolweave_testkit::skip::missing_prerequisite(
            &test,
            &format!(
                "the `{}` program is not installed (apt-get install {})",
                balancer.program(),
                match balancer {
                    Balancer::HaProxy | Balancer::HaProxyShared => "haproxy",
                    Balancer::Nginx => "nginx-light",
                }
            ),
        );
        return;
    };
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let mut copies = Vec::new();
    for index in 0..COPIES {
        let arguments = balancer.copy_arguments(index);
        let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
        copies.push(
            HttpToolweave::start(toolweave(), &config, &arguments, &[])
                .await
                .unwrap(),
        );
    }
    let addresses: Vec<_> = copies.iter().map(HttpToolweave::address).collect();
    let names: Arc<HashMap<String, String>> = Arc::new(
        addresses
            .iter()
            .enumerate()
            .map(|(index, address)| (address.to_string(), copy_name(index)))
            .collect(),
    );
    let http = toolweave_testkit::http::client();
    // Every copy ready, and the balancer listening.
    for address in &addresses {
        wait_for(&http, &format!("http://{address}/readyz"), 200, dir.path()).await;
    }
    let (_balancer, port) = start_balancer(balancer, &program, dir.path(), &addresses, &http).await;
    let url = format!("http://127.0.0.1:{port}/mcp");

    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let mut client = Client {
            http: http.clone(),
            url: url.clone(),
            session: None,
            copy: String::new(),
            next_id: 0,
            names: names.clone(),
        };
        if let Err(failure) = client.initialize().await {
            panic!("{test}: initialize: {failure}{}", said(dir.path()));
        }
        clients.push(client);
    }
    let names: Vec<String> = (0..COPIES).map(copy_name).collect();
    for name in &names {
        let sessions = clients.iter().filter(|client| &client.copy == name).count();
        assert!(
            sessions >= CLIENTS / COPIES - 2,
            "{test}: {name} has {sessions} sessions{}",
            said(dir.path())
        );
    }
    let stopped_name = names[STOPPED].clone();
    let on_stopped = clients
        .iter()
        .filter(|client| client.copy == stopped_name)
        .count();

    let tally = Arc::new(Tally::default());
    let stopping = Arc::new(AtomicBool::new(false));
    let draining = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(index, mut client)| {
            let tally = tally.clone();
            let stopping = stopping.clone();
            let draining = draining.clone();
            let stopped_name = stopped_name.clone();
            tokio::spawn(async move {
                let mut round = 0;
                while round < ROUNDS {
                    // The stopped copy's clients hold halfway until that copy says it drains,
                    // so each of them has a request to send after it, however the copies'
                    // speeds compare and however long the signal takes to be handled.
                    if round == ROUNDS / 2
                        && client.copy == stopped_name
                        && !draining.load(Ordering::Relaxed)
                    {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        continue;
                    }
                    let code = format!(
                        "return await tools.fixture.add({{ a: {}, b: {round} }})",
                        index * 1000
                    );
                    let sent = Instant::now();
                    match client.execute(&code).await {
                        Ok((value, copy)) => {
                            let took = sent.elapsed();
                            tally.latencies.lock().unwrap().push((sent, took));
                            if value != json!((index * 1000 + round).to_string()) || copy != client.copy {
                                tally.failures.lock().unwrap().push(format!(
                                    "client {index} round {round}: {value} from {copy}, its session is on {}",
                                    client.copy
                                ));
                            }
                            tally.completed.fetch_add(1, Ordering::Relaxed);
                            round += 1;
                        }
                        Err(Failure::SessionGone)
                            if stopping.load(Ordering::Relaxed) && client.copy == stopped_name =>
                        {
                            // Its copy is gone: a new session, on another copy; the round again.
                            tally.moved.fetch_add(1, Ordering::Relaxed);
                            match client.initialize().await {
                                Ok(copy) if copy != stopped_name => {}
                                Ok(copy) => {
                                    tally.failures.lock().unwrap().push(format!(
                                        "client {index}: a new session went to the stopped {copy}"
                                    ));
                                    return;
                                }
                                Err(failure) => {
                                    tally.failures.lock().unwrap().push(format!(
                                        "client {index}: no new session: {failure}"
                                    ));
                                    return;
                                }
                            }
                        }
                        Err(failure) => {
                            tally.failures.lock().unwrap().push(format!(
                                "client {index} round {round} on {}: {failure}",
                                client.copy
                            ));
                            return;
                        }
                    }
                }
            })
        })
        .collect();

    // A third of the way in, the copy is told to stop.
    while tally.completed.load(Ordering::Relaxed) < CLIENTS * ROUNDS / 3 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{test}: the load stalled: {} executions in 60 s{}",
            tally.completed.load(Ordering::Relaxed),
            said(dir.path())
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let done_before_stop = tally.completed.load(Ordering::Relaxed);
    let stop_at = Instant::now();
    stopping.store(true, Ordering::Relaxed);
    let mut victim = copies.remove(STOPPED);
    if let Err(error) = victim.send_terminate() {
        panic!(
            "{test}: the stopped copy: {error:#}; its stderr:\n{}",
            victim.stderr()
        );
    }
    // Its own clients hold, so it may have had no request for its quiet period already and end
    // at once: it drains when `/readyz` says so, or when it has ended.
    let readyz = format!("http://{}/readyz", addresses[STOPPED]);
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        if victim.try_wait().unwrap().is_some() {
            break;
        }
        if let Ok(response) = http.get(&readyz).send().await
            && response.status().as_u16() == 503
        {
            break;
        }
        assert!(
            Instant::now() < until,
            "{test}: {readyz} never answered 503 and the copy did not exit{}",
            said(dir.path())
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    draining.store(true, Ordering::Relaxed);
    let exited = match victim.wait_exit(Duration::from_secs(20)).await {
        Ok(exited) => exited,
        Err(error) => panic!(
            "{test}: the stopped copy: {error:#}; its stderr:\n{}",
            victim.stderr()
        ),
    };
    let drained_in = stop_at.elapsed();
    for task in tasks {
        task.await.unwrap();
    }
    let elapsed = started.elapsed();
    let failures = tally.failures.lock().unwrap().clone();
    assert!(
        failures.is_empty(),
        "{test}: {} failures: {failures:#?}{}",
        failures.len(),
        said(dir.path())
    );
    assert!(exited.success(), "{exited}: {}", victim.stderr());
    assert_eq!(tally.completed.load(Ordering::Relaxed), CLIENTS * ROUNDS);
    assert_eq!(
        tally.moved.load(Ordering::Relaxed),
        on_stopped,
        "{test}: every client of the stopped copy moves once ({done_before_stop} executions done at the stop){}",
        said(dir.path())
    );

    let latencies = tally.latencies.lock().unwrap();
    let mut before: Vec<Duration> = latencies
        .iter()
        .filter(|(sent, _)| *sent < stop_at)
        .map(|(_, took)| *took)
        .collect();
    before.sort();
    let percentile =
        |sorted: &[Duration], p: usize| sorted[(sorted.len() * p / 100).min(sorted.len() - 1)];
    eprintln!(
        "{COPIES} copies behind {balancer:?}, {CLIENTS} clients: {} executions in {:.2} s; before the stop {} at {:.0}/s, p50 {:.1} ms, p99 {:.1} ms; {on_stopped} sessions moved; the stopped copy drained and exited in {:.2} s",
        CLIENTS * ROUNDS,
        elapsed.as_secs_f64(),
        before.len(),
        before.len() as f64 / stop_at.duration_since(started).as_secs_f64(),
        percentile(&before, 50).as_secs_f64() * 1000.0,
        percentile(&before, 99).as_secs_f64() * 1000.0,
        drained_in.as_secs_f64(),
    );
}

/// What the balancer logged (warnings and errors), for a failure's message.
pub(super) fn said(dir: &Path) -> String {
    let log = std::fs::read_to_string(dir.join(LOG)).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    let last = &lines[lines.len().saturating_sub(40)..];
    if last.is_empty() {
        "\n(the balancer logged nothing)".to_owned()
    } else {
        format!("\nthe balancer's last log lines:\n{}", last.join("\n"))
    }
}

/// Starts `balancer` on a free loopback port and waits until it answers `/readyz` through to a
/// copy: the process and its port. The port is free when it is picked, but another socket may
/// take it before the balancer binds it; then the balancer exits, and it is started again on
/// another port.
pub(super) async fn start_balancer(
    balancer: Balancer,
    program: &Path,
    dir: &Path,
    copies: &[SocketAddr],
    http: &reqwest::Client,
) -> (tokio::process::Child, u16) {
    for _ in 0..3 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .unwrap();
        let mut child = balancer.start(program, dir, port, copies);
        let url = format!("http://127.0.0.1:{port}/readyz");
        let until = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(response) = http.get(&url).send().await
                && response.status().as_u16() == 200
            {
                return (child, port);
            }
            if let Some(status) = child.try_wait().unwrap() {
                let log = said(dir);
                assert!(
                    log.contains("in use"),
                    "{balancer:?} exited ({status}) before it listened on {port}{log}"
                );
                eprintln!("{balancer:?} could not listen on {port} (in use); another port");
                break;
            }
            assert!(
                Instant::now() < until,
                "{balancer:?} on {port} never answered /readyz with 200{}",
                said(dir)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    panic!("{balancer:?} found no free port in 3 tries{}", said(dir));
}

/// Polls `url` until it answers `status`; `dir` holds the balancer's log.
pub(super) async fn wait_for(http: &reqwest::Client, url: &str, status: u16, dir: &Path) {
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(response) = http.get(url).send().await
            && response.status().as_u16() == status
        {
            return;
        }
        assert!(
            Instant::now() < until,
            "{url} never answered {status}{}",
            said(dir)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
