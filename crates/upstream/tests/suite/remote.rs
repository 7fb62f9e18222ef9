//! Remote upstream servers: the fixture server of `toolweave-testkit` over streamable HTTP and
//! over the legacy HTTP+SSE transport, as separate processes the tests start, kill and restart.
//!
//! Like `manager.rs`, these need the fixture binary built (`cargo build -p toolweave-testkit`).

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use toolweave_config::Config;
use toolweave_testkit::fixture_http::RemoteFixture;
use toolweave_testkit::fixture_oauth::expire_access_tokens;
use toolweave_upstream::{Error, Logins, Options, ServerState, UpstreamManager};

use super::oauth::{add, log_in, origin, tokens};

const TOKEN: &str = "tok-SECRET-4242";
const URL_KEY: &str = "url-SECRET-7171";

/// A config from `servers` (the inside of `mcpServers`), with `${VAR}`s resolved from `variables`.
fn config(servers: Value, variables: &[(&str, &str)]) -> Config {
    super::logs();
    let variables: Vec<(String, String)> = variables
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
    let text = json!({ "mcpServers": servers }).to_string();
    toolweave_config::parse_str_with_env(&text, Path::new("/test/mcp.json"), &|name| {
        variables
            .iter()
            .find(|(candidate, _)| candidate == name)
            .map(|(_, value)| value.clone())
    })
    .unwrap_or_else(|error| panic!("{error}"))
}

fn options() -> Options {
    Options {
        startup_timeout: Duration::from_secs(10),
        call_timeout: Duration::from_secs(10),
    }
}

async fn call_text(
    manager: &UpstreamManager,
    server: &str,
    tool: &str,
    args: Value,
) -> Result<String, Error> {
    let arguments: Option<Map<String, Value>> = match args {
        Value::Object(map) => Some(map),
        _ => None,
    };
    let result = manager
        .call_tool(server, tool, arguments, None, CancellationToken::new())
        .await?;
    Ok(result
        .content
        .first()
        .and_then(|item| item.as_text())
        .map(|text| text.text.clone())
        .unwrap_or_default())
}

fn fixture_tool_count() -> usize {
    toolweave_testkit::fixture::tool_definitions().len()
}

/// A fixture over `transport` (`--http` or `--sse`) that wants the bearer token.
async fn fixture_with_token(transport: &str, name: &str) -> RemoteFixture {
    RemoteFixture::start(&[
        transport,
        "127.0.0.1:0",
        "--name",
        name,
        "--require-header",
        &format!("Authorization: Bearer {TOKEN}"),
    ])
    .await
    .unwrap_or_else(|error| panic!("{error:#}"))
}

/// Its entry, with the token from a variable.
fn entry(kind: &str, url: &str) -> Value {
    json!({ "type": kind, "url": url, "headers": { "Authorization": "Bearer ${FIXTURE_TOKEN}" } })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_servers_list_tools_and_answer_calls_with_headers_from_variables() {
    let http = fixture_with_token("--http", "over-http").await;
    let sse = fixture_with_token("--sse", "over-sse").await;
    let upstream = UpstreamManager::start(
        &config(
            json!({ "web": entry("http", &http.url), "legacy": entry("sse", &sse.url) }),
            &[("FIXTURE_TOKEN", TOKEN)],
        ),
        options(),
    );
    for (name, tools) in upstream.all_tools().await {
        let tools = tools.unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(tools.len(), fixture_tool_count(), "{name}");
    }
    for (server, transport, whoami) in [("web", "http", "over-http"), ("legacy", "sse", "over-sse")]
    {
        assert_eq!(
            call_text(&upstream, server, "add", json!({ "a": 2, "b": 5 }))
                .await
                .unwrap(),
            "7",
            "{server}"
        );
        assert_eq!(
            call_text(&upstream, server, "whoami", json!({}))
                .await
                .unwrap(),
            whoami
        );
        let status = upstream
            .status()
            .into_iter()
            .find(|status| status.name == server)
            .unwrap();
        assert_eq!(status.transport, transport);
        assert_eq!(status.process_id, None);
        assert_eq!(
            status.describe(),
            format!("ready, {} tools", fixture_tool_count())
        );

        // An upstream error answer is the tool's, not the connection's.
        let error = call_text(&upstream, server, "no-such-tool", json!({}))
            .await
            .unwrap_err();
        assert!(matches!(error, Error::Rejected { .. }), "{error:?}");

        // notifications/tools/list_changed reaches toolweave over HTTP as over stdio.
        let mut changes = upstream.subscribe();
        changes.borrow_and_update();
        call_text(&upstream, server, "register", json!({ "name": "late" }))
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(5), changes.changed())
            .await
            .unwrap_or_else(|_| panic!("{server}: no refresh after list_changed"))
            .unwrap();
        let tools = upstream.tools(server).await.unwrap();
        assert_eq!(tools.len(), fixture_tool_count() + 1, "{server}");
    }
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_remote_server_is_connected_again_on_a_later_call() {
    for transport in ["--http", "--sse"] {
        let mut fixture = fixture_with_token(transport, "phoenix").await;
        let kind = if transport == "--http" { "http" } else { "sse" };
        let upstream = UpstreamManager::start(
            &config(
                json!({ "phoenix": entry(kind, &fixture.url) }),
                &[("FIXTURE_TOKEN", TOKEN)],
            ),
            options(),
        );
        assert_eq!(
            call_text(&upstream, "phoenix", "add", json!({ "a": 1, "b": 2 }))
                .await
                .unwrap(),
            "3"
        );
        fixture.kill().await.unwrap();
        let error = call_text(&upstream, "phoenix", "add", json!({ "a": 1, "b": 2 }))
            .await
            .unwrap_err();
        assert!(
            matches!(error, Error::Disconnected { .. }),
            "{kind}: {error:?}"
        );
        let message = error.to_string();
        assert!(
            message.starts_with("server \"phoenix\" lost its connection"),
            "{message}"
        );
        assert!(
            message.ends_with("toolweave connects again on a later call"),
            "{message}"
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
            "{kind}: {status:?}"
        );

        // Back on the same address: after the restart delay, a call connects again.
        let _again = RemoteFixture::start(&[
            transport,
            &fixture.address,
            "--name",
            "phoenix",
            "--require-header",
            &format!("Authorization: Bearer {TOKEN}"),
        ])
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_millis(1100)).await;
        assert_eq!(
            call_text(&upstream, "phoenix", "add", json!({ "a": 2, "b": 2 }))
                .await
                .unwrap(),
            "4",
            "{kind}"
        );
        assert_eq!(upstream.status()[0].starts, 2, "{kind}");
        upstream.shutdown().await;
    }
}

/// A call sent in the instant a server dies is answered at once, never left to its timeout. The
/// kill is sent without waiting and the call follows after a delay swept across the moments the
/// connection ends; a call rmcp left unanswered used to wait its full timeout (about one in
/// three hundred tries here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_racing_a_remote_server_s_death_is_answered_at_once() {
    let rounds = 300_u64;
    for round in 0..rounds {
        let transport = if round % 5 == 0 { "--http" } else { "--sse" };
        let kind = &transport[2..];
        let mut fixture = RemoteFixture::start(&[transport, "127.0.0.1:0", "--name", "dying"])
            .await
            .unwrap();
        let upstream = UpstreamManager::start(
            &config(
                json!({ "dying": { "type": kind, "url": fixture.url } }),
                &[],
            ),
            Options {
                startup_timeout: Duration::from_secs(10),
                call_timeout: Duration::from_secs(10),
            },
        );
        assert_eq!(
            call_text(&upstream, "dying", "add", json!({ "a": 1, "b": 2 }))
                .await
                .unwrap(),
            "3"
        );
        fixture.start_kill().unwrap();
        // Blocking on purpose: a timer of the runtime is not this fine.
        std::thread::sleep(Duration::from_micros(round * 1000 / rounds));
        let started = std::time::Instant::now();
        let answer = call_text(&upstream, "dying", "add", json!({ "a": 1, "b": 2 })).await;
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(5),
            "{kind}, round {round}: the call took {took:?}: {answer:?}"
        );
        match answer {
            // Answered before the server died.
            Ok(text) => assert_eq!(text, "3"),
            Err(Error::Disconnected { .. } | Error::CallFailed { .. }) => {}
            Err(other) => panic!("{kind}, round {round}: {other:?}"),
        }
        upstream.shutdown().await;
        fixture.kill().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_server_that_never_answers_hits_the_startup_timeout() {
    // Accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let _holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let upstream = UpstreamManager::start(
        &config(
            json!({
                "mute": { "type": "http", "url": format!("http://{address}/mcp") },
                "mute-sse": { "type": "sse", "url": format!("http://{address}/sse") },
            }),
            &[],
        ),
        Options {
            startup_timeout: Duration::from_millis(500),
            ..options()
        },
    );
    let started = std::time::Instant::now();
    for (name, tools) in upstream.all_tools().await {
        let error = tools.unwrap_err();
        assert!(
            matches!(error, Error::StartTimeout { .. }),
            "{name}: {error:?}"
        );
        assert!(
            error.to_string().starts_with(&format!(
                "server \"{name}\" did not finish starting within 500 ms"
            )),
            "{error}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(4));
    upstream.shutdown().await;
}

/// Every failure is explained (401 with what to change, 404, refused, a login needed), and neither
/// the messages nor the logs (at trace level, every crate; the other tests' too, which must not
/// show a secret either) hold a secret that came from a variable, nor an OAuth token (of a login,
/// and of its renewal).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_explained_and_secrets_never_shown() {
    let captured = super::logs();

    let mut http = fixture_with_token("--http", "web").await;
    let sse = fixture_with_token("--sse", "legacy").await;
    let closed_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let with_key = |url: &str| format!("{url}?key=${{URL_KEY}}");
    let wrong = |kind: &str, url: &str| json!({ "type": kind, "url": with_key(url), "headers": { "Authorization": "Bearer ${WRONG_TOKEN}" } });
    let oauth = RemoteFixture::start(&["--http", "127.0.0.1:0", "--oauth", "--name", "signed-in"])
        .await
        .unwrap();
    let unsigned = RemoteFixture::start(&["--sse", "127.0.0.1:0", "--oauth"])
        .await
        .unwrap();
    let logins_folder = tempfile::tempdir().unwrap();
    let logins = Logins::at(logins_folder.path());
    let variables = [
        ("FIXTURE_TOKEN", TOKEN),
        ("WRONG_TOKEN", "wrong-SECRET-999"),
        ("URL_KEY", URL_KEY),
    ];
    let signed_in = config(
        json!({ "signed-in": { "type": "http", "url": with_key(&oauth.url) } }),
        &variables,
    );
    log_in(&signed_in.servers[0], &logins).await;
    let mut secrets: Vec<String> = [TOKEN, "wrong-SECRET-999", URL_KEY]
        .iter()
        .map(|secret| (*secret).to_owned())
        .collect();
    secrets.extend(tokens(logins_folder.path()));
    let upstream = UpstreamManager::start_with_logins(
        &config(
            json!({
                "http-401": wrong("http", &http.url),
                "sse-401": wrong("sse", &sse.url),
                "http-404": entry("http", &http.url.replace("/mcp", "/nowhere")),
                "sse-404": entry("sse", &sse.url.replace("/sse", "/nowhere")),
                "refused": entry("http", &with_key(&format!("http://127.0.0.1:{closed_port}/mcp"))),
                "tls": entry("http", &with_key(&http.url.replace("http://", "https://"))),
                "good": entry("http", &with_key(&http.url)),
                "signed-in": { "type": "http", "url": with_key(&oauth.url) },
                "unsigned": { "type": "sse", "url": with_key(&unsigned.url) },
            }),
            &variables,
        ),
        options(),
        Some(logins),
    );
    let mut messages = Vec::new();
    for (name, tools) in upstream.all_tools().await {
        match tools {
            Ok(_) => assert!(name == "good" || name == "signed-in", "{name}"),
            Err(error) => messages.push((name, error.to_string())),
        }
    }
    let message = |name: &str| {
        messages
            .iter()
            .find(|(candidate, _)| candidate == name)
            .map(|(_, message)| message.clone())
            .unwrap_or_else(|| panic!("{name} connected"))
    };
    assert_eq!(
        message("http-401"),
        format!(
            "server \"http-401\" (http, {}?key=${{URL_KEY}}) could not be connected: it answered HTTP 401 Unauthorized: the server wants credentials it did not get or did not accept; check \"headers\" in the config file (for example \"Authorization\": \"Bearer ${{TOKEN}}\") and that the variables they use hold a valid token, or, for a server that signs in with OAuth, remove the \"Authorization\" header and run `toolweave login` with the server's name",
            http.url
        )
    );
    assert!(
        message("sse-401").starts_with(&format!(
            "server \"sse-401\" (sse, {}?key=${{URL_KEY}}) could not be connected: it answered HTTP 401 Unauthorized",
            sse.url
        )),
        "{}",
        message("sse-401")
    );
    for name in ["http-404", "sse-404"] {
        assert!(
            message(name).contains("it answered HTTP 404 Not Found: there is no MCP endpoint at that address; check the path in \"url\""),
            "{}",
            message(name)
        );
    }
    assert!(
        message("refused").contains("could not be connected: the connection was refused"),
        "{}",
        message("refused")
    );
    // TLS to a plain-HTTP server.
    assert!(
        message("tls").contains("could not be connected: the TLS handshake failed ("),
        "{}",
        message("tls")
    );

    assert_eq!(
        message("unsigned"),
        "server \"unsigned\" needs a login: it answered HTTP 401: it wants an OAuth login, and toolweave has none for it. Run `toolweave login unsigned` in a terminal, then call again"
    );
    // A login's token used, refused and renewed: neither token shows.
    assert_eq!(add(&upstream, "signed-in", 1, 2).await.unwrap(), "3");
    expire_access_tokens(&origin(&oauth.url)).await.unwrap();
    assert_eq!(add(&upstream, "signed-in", 2, 2).await.unwrap(), "4");
    let renewed = tokens(logins_folder.path());
    assert!(renewed.iter().all(|token| !secrets.contains(token)));
    secrets.extend(renewed);

    // A good server with a key in its URL, then killed: the disconnect names no secret either.
    assert_eq!(
        call_text(&upstream, "good", "add", json!({ "a": 1, "b": 1 }))
            .await
            .unwrap(),
        "2"
    );
    http.kill().await.unwrap();
    let error = call_text(&upstream, "good", "add", json!({ "a": 1, "b": 1 }))
        .await
        .unwrap_err();
    messages.push(("good".to_owned(), error.to_string()));
    for status in upstream.status() {
        messages.push((status.name.clone(), status.describe()));
    }
    upstream.shutdown().await;

    let logs = captured.text();
    assert!(
        logs.contains("http-401"),
        "the logs were not captured:\n{logs}"
    );
    for secret in &secrets {
        for (name, message) in &messages {
            assert!(!message.contains(secret.as_str()), "{name}: {message}");
        }
        assert!(
            !logs.contains(secret.as_str()),
            "a secret is in the logs:\n{}",
            logs.lines()
                .filter(|line| line.contains(secret.as_str()))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}
