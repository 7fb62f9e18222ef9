//! The upstream manager against real processes: the fixture server of `toolweave-testkit`.
//!
//! The fixture is a binary of another package, so it must be built first: `cargo build -p
//! toolweave-testkit` (`cargo test --workspace`, or `cargo test -p toolweave-upstream -p
//! toolweave-testkit`, build it too). `fixture_binary()` says so when it is missing.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use toolweave_config::{Config, ServerConfig, Transport};
use toolweave_testkit::fixture_binary;
use toolweave_upstream::{Error, LimitFrom, Options, ServerState, UpstreamManager};

fn init_logs() {
    super::logs();
}

fn stdio(name: &str, command: &str, args: &[&str]) -> ServerConfig {
    ServerConfig {
        name: name.to_owned(),
        transport: Transport::Stdio {
            command: command.to_owned(),
            args: args.iter().map(|arg| (*arg).into()).collect(),
            env: BTreeMap::from([(
                "FIXTURE_SECRET".to_owned(),
                format!("secret of {name}").into(),
            )]),
            cwd: None,
            sandbox: None,
            sandbox_written: false,
        },
        source: PathBuf::from("/test/mcp.json"),
        tool_timeouts: BTreeMap::new(),
        tool_timeout: None,
    }
}

fn fixture(name: &str, extra: &[&str]) -> ServerConfig {
    let mut args = vec!["--name", name];
    args.extend_from_slice(extra);
    stdio(name, &fixture_binary().display().to_string(), &args)
}

fn manager(servers: Vec<ServerConfig>, options: Options) -> Arc<UpstreamManager> {
    init_logs();
    UpstreamManager::start(
        &Config {
            servers,
            ..Config::default()
        },
        options,
    )
}

fn arguments(value: Value) -> Option<Map<String, Value>> {
    match value {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

async fn call_text(
    manager: &UpstreamManager,
    server: &str,
    tool: &str,
    args: Value,
) -> Result<String, Error> {
    let result = manager
        .call_tool(
            server,
            tool,
            arguments(args),
            None,
            CancellationToken::new(),
        )
        .await?;
    Ok(result
        .content
        .first()
        .and_then(|item| item.as_text())
        .map(|text| text.text.clone())
        .unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_start_in_parallel_and_answer_calls() {
    let upstream = manager(
        vec![
            fixture("alpha", &[]),
            fixture("beta", &["--page-size", "3"]),
        ],
        Options::default(),
    );
    assert_eq!(upstream.server_names(), ["alpha", "beta"]);
    let all = upstream.all_tools().await;
    assert_eq!(all.len(), 2);
    for (name, tools) in &all {
        let tools = tools
            .as_ref()
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        // beta lists its tools three at a time: every page must be followed.
        assert_eq!(tools.len(), fixture_tool_count(), "{name}");
        assert_eq!(tools[0].name, "add");
    }
    for status in upstream.status() {
        assert!(status.is_ready(), "{status:?}");
        assert_eq!(
            status.describe(),
            format!("ready, {} tools", fixture_tool_count())
        );
        assert_eq!(status.transport, "stdio");
        assert!(status.process_id.is_some());
    }

    assert_eq!(
        call_text(&upstream, "alpha", "add", json!({ "a": 2, "b": 5 }))
            .await
            .unwrap(),
        "7"
    );
    assert_eq!(
        call_text(&upstream, "beta", "whoami", json!({}))
            .await
            .unwrap(),
        "beta"
    );
    // `env` from the config is added to the inherited environment.
    assert_eq!(
        call_text(
            &upstream,
            "beta",
            "env",
            json!({ "name": "FIXTURE_SECRET" })
        )
        .await
        .unwrap(),
        "secret of beta"
    );
    assert!(
        !call_text(&upstream, "beta", "env", json!({ "name": "PATH" }))
            .await
            .unwrap()
            .is_empty()
    );

    let failed = upstream
        .call_tool(
            "alpha",
            "fail",
            arguments(json!({ "message": "disk on fire" })),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(failed.is_error, Some(true));

    let rejected = call_text(&upstream, "alpha", "add", json!({ "a": 1 }))
        .await
        .unwrap_err();
    assert!(matches!(rejected, Error::Rejected { .. }), "{rejected:?}");
    assert!(
        rejected.to_string().contains("\"b\" is required"),
        "{rejected}"
    );

    let unknown = upstream.tools("gamma").await.unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "no upstream server named \"gamma\" is configured (configured: alpha, beta); use one of those names or add the server to the config file"
    );
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_call_times_out_without_blocking_others() {
    let upstream = manager(vec![fixture("fixture", &[])], Options::default());
    upstream.tools("fixture").await.unwrap();

    // A slow call in flight does not hold up a fast one to the same server.
    let slow = {
        let upstream = upstream.clone();
        tokio::spawn(async move {
            upstream
                .call_tool(
                    "fixture",
                    "slow",
                    arguments(json!({ "ms": 3000 })),
                    None,
                    CancellationToken::new(),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    assert_eq!(
        call_text(&upstream, "fixture", "add", json!({ "a": 1, "b": 2 }))
            .await
            .unwrap(),
        "3"
    );
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert!(!slow.is_finished());
    slow.abort();

    let started = Instant::now();
    let error = upstream
        .call_tool(
            "fixture",
            "slow",
            arguments(json!({ "ms": 5000 })),
            Some(Duration::from_millis(300)),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_millis(2000),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(error, Error::CallTimeout { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("300 ms"), "{message}");
    assert!(
        message.contains("the timeout given to the call"),
        "{message}"
    );
    assert!(message.contains("\"fixture\""), "{message}");

    // A server's own `timeout` in its config entry applies in place of the default, and the
    // message names it as what to raise.
    let mut patient = fixture("patient", &[]);
    patient.tool_timeout = Some(Duration::from_millis(300));
    let configured = manager(vec![patient], Options::default());
    let started = Instant::now();
    let error = call_text(&configured, "patient", "slow", json!({ "ms": 5000 }))
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_millis(3000),
        "{:?}",
        started.elapsed()
    );
    assert!(
        error
            .to_string()
            .contains("within 300 ms (the server's \"timeout\" in its config entry): it had "),
        "{error}"
    );
    assert!(
        error.to_string().ends_with(
            "the call was cancelled. Ask for less in one call, or raise the server's \"timeout\" \
             in its config entry"
        ),
        "{error}"
    );
    configured.shutdown().await;

    // The default timeout applies when the call gives none.
    let quick = manager(
        vec![fixture("quick", &[])],
        Options {
            call_timeout: Duration::from_millis(200),
            ..Options::default()
        },
    );
    let error = call_text(&quick, "quick", "slow", json!({ "ms": 5000 }))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("200 ms"), "{error}");
    assert!(
        matches!(
            error,
            Error::CallTimeout {
                limit_from: LimitFrom::Flag,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("(--tool-timeout-ms)"), "{error}");
    assert_eq!(
        call_text(&quick, "quick", "add", json!({ "a": 1, "b": 1 }))
            .await
            .unwrap(),
        "2"
    );
    quick.shutdown().await;
    upstream.shutdown().await;
}

/// A tool named in its server's `toolTimeouts` has its own timeout, instead of its server's
/// `timeout` and the default; the server's other tools keep the server's; a timeout given to the
/// call wins over all of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_timeout_applies_to_that_tool() {
    let mut config = fixture("reports", &[]);
    config.tool_timeout = Some(Duration::from_millis(600));
    config
        .tool_timeouts
        .insert("slow".to_owned(), Duration::from_millis(3000));
    let mut other = fixture("other", &[]);
    other.tool_timeout = Some(Duration::from_millis(600));
    other
        .tool_timeouts
        .insert("echo".to_owned(), Duration::from_millis(5000));
    let upstream = manager(
        vec![config, other],
        Options {
            call_timeout: Duration::from_millis(300),
            ..Options::default()
        },
    );
    upstream.tools("reports").await.unwrap();
    upstream.tools("other").await.unwrap();
    // A tool without an entry of its own has its server's timeout.
    let error = call_text(&upstream, "other", "slow", json!({ "ms": 10000 }))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::CallTimeout {
                limit,
                limit_from: LimitFrom::ServerConfig,
                ..
            } if limit == Duration::from_millis(600)
        ),
        "{error:?}"
    );
    // Longer than the default and the server's, within the tool's own.
    assert_eq!(
        call_text(&upstream, "reports", "slow", json!({ "ms": 1000 }))
            .await
            .unwrap(),
        "done"
    );
    let error = call_text(&upstream, "reports", "slow", json!({ "ms": 10000 }))
        .await
        .unwrap_err();
    let Error::CallTimeout {
        limit, limit_from, ..
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(
        (*limit, *limit_from),
        (Duration::from_millis(3000), LimitFrom::ToolConfig)
    );
    assert!(
        error.to_string().starts_with(
            "server \"reports\" did not answer the call to \"slow\" within 3000 ms (the tool's \
             entry in \"toolTimeouts\" in the server's config entry)"
        ),
        "{error}"
    );
    let error = upstream
        .call_tool(
            "reports",
            "slow",
            arguments(json!({ "ms": 1000 })),
            Some(Duration::from_millis(200)),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::CallTimeout {
                limit_from: LimitFrom::Caller,
                ..
            }
        ),
        "{error:?}"
    );
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_an_in_flight_call() {
    let upstream = manager(vec![fixture("fixture", &[])], Options::default());
    upstream.tools("fixture").await.unwrap();
    let cancel = CancellationToken::new();
    let call = {
        let upstream = upstream.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            upstream
                .call_tool(
                    "fixture",
                    "slow",
                    arguments(json!({ "ms": 10000 })),
                    None,
                    cancel,
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    cancel.cancel();
    let outcome = call.await.unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(outcome.unwrap_err(), Error::Cancelled);
    // The connection is fine afterwards.
    assert_eq!(
        call_text(
            &upstream,
            "fixture",
            "echo",
            json!({ "message": "still here" })
        )
        .await
        .unwrap(),
        "still here"
    );

    // A token cancelled before the call never reaches the server.
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let error = upstream
        .call_tool(
            "fixture",
            "add",
            arguments(json!({ "a": 1, "b": 1 })),
            None,
            cancelled,
        )
        .await
        .unwrap_err();
    assert_eq!(error, Error::Cancelled);
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_to_start_say_why() {
    let missing_cwd = {
        let mut config = fixture("nowhere", &[]);
        if let Transport::Stdio { cwd, .. } = &mut config.transport {
            *cwd = Some(PathBuf::from("/nonexistent/toolweave-folder"));
        }
        config
    };
    let upstream = manager(
        vec![
            fixture("broken", &["--fail-start"]),
            stdio("missing", "/nonexistent/toolweave-no-such-server", &[]),
            stdio("unlisted", "toolweave-no-such-server-on-path", &[]),
            missing_cwd,
            ServerConfig {
                name: "remote".to_owned(),
                transport: Transport::Http {
                    url: "http://127.0.0.1:9/mcp".into(),
                    headers: BTreeMap::new(),
                    oauth: None,
                },
                source: PathBuf::from("/test/mcp.json"),
                tool_timeouts: BTreeMap::new(),
                tool_timeout: None,
            },
            ServerConfig {
                name: "legacy".to_owned(),
                transport: Transport::Sse {
                    url: "http://127.0.0.1:9/sse".into(),
                    headers: BTreeMap::new(),
                    oauth: None,
                },
                source: PathBuf::from("/test/mcp.json"),
                tool_timeouts: BTreeMap::new(),
                tool_timeout: None,
            },
            fixture("good", &[]),
            stdio("relative", "./toolweave-no-such-server", &[]),
        ],
        Options::default(),
    );
    let all = upstream.all_tools().await;
    let names: Vec<&str> = all.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "broken", "missing", "unlisted", "nowhere", "remote", "legacy", "good", "relative"
        ]
    );
    let message = |index: usize| match &all[index].1 {
        Ok(_) => panic!("{} started", all[index].0),
        Err(error) => error.to_string(),
    };

    let broken = message(0);
    assert!(
        broken.starts_with("server \"broken\" exited during startup (exit status: 1)"),
        "{broken}"
    );
    assert!(broken.contains("failing on purpose"), "{broken}");

    let missing = message(1);
    assert_eq!(
        missing,
        "server \"missing\" could not be started: the command \"/nonexistent/toolweave-no-such-server\" was not found; check \"command\" in the config file"
    );
    assert!(
        message(2).contains("\"toolweave-no-such-server-on-path\" was not found on PATH;"),
        "{}",
        message(2)
    );
    assert!(
        message(3).contains("/nonexistent/toolweave-folder does not exist; check \"cwd\""),
        "{}",
        message(3)
    );

    // Nothing listens on the discard port of the loopback address.
    let remote = message(4);
    assert_eq!(
        remote,
        "server \"remote\" (http, http://127.0.0.1:9/mcp) could not be connected: the connection was refused: nothing accepts connections at that host and port; check that the server is running and that \"url\" is right"
    );
    assert!(
        message(5).starts_with(
            "server \"legacy\" (sse, http://127.0.0.1:9/sse) could not be connected: the connection was refused"
        ),
        "{}",
        message(5)
    );
    assert_eq!(all[6].1.as_ref().map(Vec::len), Ok(fixture_tool_count()));
    // A relative path names the directory it was taken from.
    assert_eq!(
        message(7),
        format!(
            "server \"relative\" could not be started: the command \"./toolweave-no-such-server\" was not found in {} (a relative \"command\" is taken from the directory toolweave was started in; give a full path, or a \"cwd\"); check \"command\" in the config file",
            std::env::current_dir().unwrap().display()
        )
    );

    // A call to a failed server gets the same reason; the others keep working.
    let error = call_text(&upstream, "broken", "add", json!({ "a": 1, "b": 1 }))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("failing on purpose"), "{error}");
    let error = call_text(&upstream, "remote", "anything", json!({}))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Unreachable { .. }), "{error:?}");
    assert_eq!(
        call_text(&upstream, "good", "add", json!({ "a": 1, "b": 1 }))
            .await
            .unwrap(),
        "2"
    );

    let status = upstream.status();
    assert!(
        status[0]
            .describe()
            .starts_with("failed: server \"broken\" exited during startup"),
        "{}",
        status[0].describe()
    );
    assert_eq!(status[4].transport, "http");
    // A server that never came up is tried again on a later call (after a delay).
    assert!(matches!(
        status[0].state,
        ServerState::Failed {
            restarts_on_use: true,
            ..
        }
    ));
    // Failing again when tried again (after its one-second delay): reported as failing, with
    // the count and when it is tried next.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let error = call_text(&upstream, "broken", "add", json!({ "a": 1, "b": 1 }))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("failing on purpose"), "{error}");
    let described = upstream.status()[0].describe();
    assert!(
        described.starts_with("failing: server \"broken\" exited during startup")
            && described.contains(
                "; 2 failures in a row, next try in 2 s (at the next call that needs it)"
            ),
        "{described}"
    );
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_start_hits_the_startup_timeout() {
    let upstream = manager(
        vec![fixture("sleepy", &["--start-delay-ms", "5000"])],
        Options {
            startup_timeout: Duration::from_millis(500),
            ..Options::default()
        },
    );
    let started = Instant::now();
    assert_eq!(upstream.status()[0].state, ServerState::Starting);
    assert_eq!(upstream.status()[0].describe(), "starting");
    let error = call_text(&upstream, "sleepy", "add", json!({ "a": 1, "b": 1 }))
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_millis(3000),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(error, Error::StartTimeout { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.starts_with("server \"sleepy\" did not finish starting within 500 ms (--startup-timeout-ms); it was stopped"),
        "{message}"
    );
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_start_is_waited_for() {
    let upstream = manager(
        vec![fixture("late", &["--start-delay-ms", "700"])],
        Options::default(),
    );
    let started = Instant::now();
    assert_eq!(
        call_text(&upstream, "late", "add", json!({ "a": 2, "b": 3 }))
            .await
            .unwrap(),
        "5"
    );
    assert!(started.elapsed() >= Duration::from_millis(700));
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_is_reported_and_the_server_restarts_on_use() {
    let upstream = manager(
        vec![fixture("good", &[]), fixture("other", &[])],
        Options::default(),
    );
    upstream.all_tools().await;
    let mut changes = upstream.subscribe();
    changes.borrow_and_update();

    let error = call_text(&upstream, "good", "crash", json!({}))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::Exited {
                during_call: true,
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.starts_with("server \"good\" exited (exit status: 3) during the call"),
        "{message}"
    );
    assert!(
        message.contains("fixture good: crashing on purpose"),
        "{message}"
    );
    assert!(changes.has_changed().unwrap());

    // The other server is unaffected.
    assert_eq!(
        call_text(&upstream, "other", "whoami", json!({}))
            .await
            .unwrap(),
        "other"
    );
    let status = upstream.status();
    assert!(
        matches!(
            status[0].state,
            ServerState::Failed {
                restarts_on_use: true,
                ..
            }
        ),
        "{status:?}"
    );

    // Right after the crash the reason stands; after the restart delay, the next call starts it.
    let error = call_text(&upstream, "good", "add", json!({ "a": 1, "b": 1 }))
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("starts it again on a later call"),
        "{error}"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        call_text(&upstream, "good", "add", json!({ "a": 1, "b": 1 }))
            .await
            .unwrap(),
        "2"
    );
    assert_eq!(upstream.status()[0].starts, 2);
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_tool_list_is_picked_up() {
    let upstream = manager(vec![fixture("fixture", &[])], Options::default());
    assert_eq!(
        upstream.tools("fixture").await.unwrap().len(),
        fixture_tool_count()
    );
    let mut changes = upstream.subscribe();
    changes.borrow_and_update();
    call_text(&upstream, "fixture", "register", json!({ "name": "late" }))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), changes.changed())
        .await
        .expect("the version is bumped after notifications/tools/list_changed")
        .unwrap();
    let tools = upstream.tools("fixture").await.unwrap();
    assert_eq!(tools.len(), fixture_tool_count() + 1);
    assert_eq!(tools[fixture_tool_count()].name, "late");
    assert_eq!(
        upstream.status()[0].describe(),
        format!("ready, {} tools", fixture_tool_count() + 1)
    );
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_leaves_nothing_running() {
    let upstream = manager(
        vec![
            fixture("one", &[]),
            fixture("two", &[]),
            fixture("starting", &["--start-delay-ms", "20000"]),
        ],
        Options::default(),
    );
    upstream.tools("one").await.unwrap();
    upstream.tools("two").await.unwrap();
    let process_ids: Vec<u32> = upstream
        .status()
        .iter()
        .filter_map(|status| status.process_id)
        .collect();
    assert_eq!(process_ids.len(), 2);
    // A call in flight at shutdown ends with a clear reason.
    let in_flight = {
        let upstream = upstream.clone();
        tokio::spawn(async move {
            upstream
                .call_tool(
                    "one",
                    "slow",
                    arguments(json!({ "ms": 20000 })),
                    None,
                    CancellationToken::new(),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    upstream.shutdown().await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    for status in upstream.status() {
        assert_eq!(status.state, ServerState::Stopped, "{}", status.name);
    }
    let error = in_flight.await.unwrap().unwrap_err();
    assert!(error.to_string().contains("server \"one\""), "{error}");
    if cfg!(target_os = "linux") {
        for process_id in process_ids {
            assert!(
                !std::path::Path::new(&format!("/proc/{process_id}")).exists(),
                "process {process_id} is still running"
            );
        }
    }
    // Nothing restarts after shutdown.
    let error = call_text(&upstream, "one", "add", json!({ "a": 1, "b": 1 }))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "server \"one\" was stopped because toolweave is shutting down"
    );
}

/// How many tools the fixture server lists before any `register` call.
/// A relative `command` is taken from the entry's `cwd`, as the error for a missing one says.
#[tokio::test]
async fn a_relative_command_is_taken_from_cwd() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(fixture_binary(), dir.path().join("server")).unwrap();
    let with_cwd = |name: &str, command: &str| {
        let mut config = stdio(name, command, &["--name", name]);
        if let Transport::Stdio { cwd, .. } = &mut config.transport {
            *cwd = Some(dir.path().to_path_buf());
        }
        config
    };
    let upstream = manager(
        vec![
            with_cwd("found", "./server"),
            with_cwd("absent", "./no-such-server"),
        ],
        Options::default(),
    );
    assert_eq!(
        call_text(&upstream, "found", "add", json!({ "a": 2, "b": 5 }))
            .await
            .unwrap(),
        "7"
    );
    let error = call_text(&upstream, "absent", "add", json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "server \"absent\" could not be started: the command \"./no-such-server\" was not found in {} (a relative \"command\" is taken from the entry's \"cwd\"); check \"command\" in the config file",
            dir.path().display()
        )
    );
    upstream.shutdown().await;
}

/// A script whose `#!` interpreter is missing, or an executable whose dynamic loader is, is not
/// reported as a missing command.
#[tokio::test]
async fn a_missing_interpreter_is_named() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("server.py");
    std::fs::write(&script, "#!/nonexistent/python3.99\nprint('hi')\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    // An executable whose dynamic loader is missing: the fixture, with the loader's path in its
    // program header changed to one that does not exist (same length, so nothing moves).
    let binary = dir.path().join("elsewhere-built");
    let mut bytes = std::fs::read(fixture_binary()).unwrap();
    let loader = b"/lib64/ld-linux-x86-64.so.2";
    let at = bytes
        .windows(loader.len())
        .position(|window| window == loader);
    if let Some(at) = at {
        bytes[at + loader.len() - 1] = b'9';
    }
    std::fs::write(&binary, &bytes).unwrap();
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    let upstream = manager(
        vec![
            stdio("script", script.to_str().unwrap(), &[]),
            stdio("binary", binary.to_str().unwrap(), &[]),
        ],
        Options::default(),
    );
    let error = call_text(&upstream, "script", "anything", json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "server \"script\" could not be started: running \"{0}\" failed: {0} exists, but the interpreter its first line names (#!/nonexistent/python3.99) was not found; install it, or change that line",
            script.display()
        )
    );
    let error = call_text(&upstream, "binary", "anything", json!({}))
        .await
        .unwrap_err();
    if at.is_some() {
        assert!(
            error
                .to_string()
                .contains("exists, but its dynamic loader was not found"),
            "{error}"
        );
    } else {
        toolweave_testkit::skip::not_applicable(
            "the missing-loader case of a_missing_interpreter_is_named",
            "the fixture names no x86-64 glibc loader (another architecture or C library)",
        );
    }
    upstream.shutdown().await;
}

fn fixture_tool_count() -> usize {
    toolweave_testkit::fixture::tool_definitions().len()
}
