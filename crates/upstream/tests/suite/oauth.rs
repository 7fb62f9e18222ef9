//! Remote servers that want an OAuth login: the fixture with `--oauth`, its own authorization
//! server, as a separate process. A login is made with `toolweave_upstream::login`, the person's
//! browser played by the fixture's `browse`; the logins live in a folder of each test's own.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use toolweave_config::{Config, ServerConfig};
use toolweave_testkit::fixture_http::RemoteFixture;
use toolweave_testkit::fixture_oauth::{OAuthStats, browse, expire_access_tokens, stats_of};
use toolweave_upstream::{
    Error, LoginOptions, LoginOutcome, LoginStatus, Logins, LogoutOutcome, Options,
    UpstreamManager, login, login_status, logout,
};

/// A fixture that wants a login, over `transport` (`--http` or `--sse`).
async fn fixture(transport: &str, extra: &[&str]) -> RemoteFixture {
    let mut arguments = vec![transport, "127.0.0.1:0", "--oauth"];
    arguments.extend_from_slice(extra);
    RemoteFixture::start(&arguments)
        .await
        .unwrap_or_else(|error| panic!("{error:#}"))
}

/// `http://127.0.0.1:PORT` of a fixture's URL.
pub(crate) fn origin(url: &str) -> String {
    let rest = url.strip_prefix("http://").unwrap();
    format!("http://{}", rest.split('/').next().unwrap())
}

/// A config with `servers` (the inside of `mcpServers`).
pub(crate) fn config(servers: Value) -> Config {
    super::logs();
    let text = json!({ "mcpServers": servers }).to_string();
    toolweave_config::parse_str(&text, Path::new("/test/mcp.json"))
        .unwrap_or_else(|error| panic!("{error}"))
}

fn options() -> Options {
    Options {
        startup_timeout: Duration::from_secs(10),
        call_timeout: Duration::from_secs(10),
    }
}

/// Logs in to `server`, the browser played by the fixture's `browse`.
pub(crate) async fn log_in(server: &ServerConfig, logins: &Logins) -> LoginOutcome {
    let mut open = |url: &str| {
        let url = url.to_owned();
        tokio::spawn(async move {
            if let Err(error) = browse(&url).await {
                eprintln!("browse: {error:#}");
            }
        });
    };
    login(
        server,
        logins,
        LoginOptions {
            timeout: Duration::from_secs(10),
            startup_timeout: Duration::from_secs(10),
            open: &mut open,
        },
    )
    .await
    .unwrap_or_else(|error| panic!("{error}"))
}

pub(crate) async fn add(
    manager: &UpstreamManager,
    server: &str,
    a: i64,
    b: i64,
) -> Result<String, Error> {
    let arguments: Map<String, Value> = json!({ "a": a, "b": b }).as_object().cloned().unwrap();
    let result = manager
        .call_tool(
            server,
            "add",
            Some(arguments),
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

/// The access and refresh tokens the login files in `dir` hold.
pub(crate) fn tokens(dir: &Path) -> Vec<String> {
    let mut tokens = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|extension| extension != "json") {
            continue;
        }
        let login: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let token = &login["grant"]["token"];
        tokens.extend(
            ["access_token", "refresh_token"]
                .iter()
                .filter_map(|name| token[name].as_str().map(str::to_owned)),
        );
    }
    tokens
}

async fn stats(fixture: &RemoteFixture) -> OAuthStats {
    stats_of(&origin(&fixture.url)).await.unwrap()
}

/// Without a login, starting and calling fail naming `toolweave login`; a login is kept in a
/// `0600` file in a `0700` folder, and used by every later connection, over both transports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_is_asked_for_kept_owner_only_and_used() {
    let http = fixture("--http", &[]).await;
    let sse = fixture("--sse", &[]).await;
    let folder = tempfile::tempdir().unwrap();
    let logins = Logins::at(folder.path().join("logins"));
    let config = config(json!({
        "web": { "type": "http", "url": http.url },
        "legacy": { "type": "sse", "url": sse.url },
    }));
    let upstream = UpstreamManager::start_with_logins(&config, options(), Some(logins.clone()));
    for (name, transport) in [("web", "http"), ("legacy", "sse")] {
        let error = add(&upstream, name, 1, 2).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "server \"{name}\" needs a login: it answered HTTP 401: it wants an OAuth login, and toolweave has none for it. Run `toolweave login {name}` in a terminal, then call again"
            ),
            "{transport}"
        );
        assert!(matches!(error, Error::LoginNeeded { .. }));
    }
    upstream.shutdown().await;

    for server in &config.servers {
        assert_eq!(login_status(server, &logins), LoginStatus::None);
        let LoginOutcome::LoggedIn {
            tools,
            scopes,
            expires_at,
        } = log_in(server, &logins).await
        else {
            panic!("{} needed no login", server.name);
        };
        assert_eq!(tools, toolweave_testkit::fixture::tool_definitions().len());
        assert_eq!(scopes, ["fixture:use"]);
        assert!(expires_at.is_some());
        assert!(matches!(
            login_status(server, &logins),
            LoginStatus::LoggedIn {
                renewable: true,
                asks_for_more: false,
                ..
            }
        ));
    }
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(logins.dir()), 0o700);
    for entry in std::fs::read_dir(logins.dir()).unwrap() {
        assert_eq!(mode(&entry.unwrap().path()), 0o600);
    }

    let upstream = UpstreamManager::start_with_logins(&config, options(), Some(logins.clone()));
    assert_eq!(add(&upstream, "web", 2, 3).await.unwrap(), "5");
    assert_eq!(add(&upstream, "legacy", 4, 5).await.unwrap(), "9");
    upstream.shutdown().await;
    for fixture in [&http, &sse] {
        let stats = stats(fixture).await;
        assert_eq!(
            (stats.registrations, stats.logins, stats.refreshes),
            (1, 1, 0)
        );
    }
}

/// Calls that find the token about to expire renew it once between them, before it is used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_renew_an_expiring_token_once() {
    let http = fixture("--http", &["--token-lifetime-secs", "2"]).await;
    let folder = tempfile::tempdir().unwrap();
    let logins = Logins::at(folder.path());
    let config = config(json!({ "short": { "type": "http", "url": http.url } }));
    log_in(&config.servers[0], &logins).await;
    let upstream = UpstreamManager::start_with_logins(&config, options(), Some(logins.clone()));
    assert_eq!(add(&upstream, "short", 1, 1).await.unwrap(), "2");
    let before = tokens(folder.path());
    // A two-second token is renewed once less than a second of it is left.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let calls = (0..8).map(|index| {
        let upstream = upstream.clone();
        tokio::spawn(async move { add(&upstream, "short", index, 100).await })
    });
    for (index, call) in futures::future::join_all(calls)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(call.unwrap().unwrap(), (index + 100).to_string());
    }
    let stats = stats(&http).await;
    assert_eq!(
        (stats.refreshes, stats.refused_refreshes),
        (1, 0),
        "{stats:?}"
    );
    // The renewed tokens are kept, and the server never saw the old one refused.
    let after = tokens(folder.path());
    assert!(before.iter().all(|token| !after.contains(token)));
    assert_eq!(
        stats.refused_requests, 1,
        "only the first connection went without a token"
    );
    upstream.shutdown().await;
}

/// A token the server stops taking mid-session is renewed once, however many calls meet the
/// refusal at once, and the calls go through; over both transports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_is_renewed_once_for_concurrent_calls() {
    for transport in ["http", "sse"] {
        refused_token_is_renewed_once(transport).await;
    }
}

async fn refused_token_is_renewed_once(transport: &str) {
    let remote = fixture(&format!("--{transport}"), &[]).await;
    let folder = tempfile::tempdir().unwrap();
    let logins = Logins::at(folder.path());
    let config = config(json!({ "revoking": { "type": transport, "url": remote.url } }));
    log_in(&config.servers[0], &logins).await;
    let upstream = UpstreamManager::start_with_logins(&config, options(), Some(logins.clone()));
    assert_eq!(add(&upstream, "revoking", 1, 1).await.unwrap(), "2");
    expire_access_tokens(&origin(&remote.url)).await.unwrap();
    let calls = (0..8).map(|index| {
        let upstream = upstream.clone();
        tokio::spawn(async move { add(&upstream, "revoking", index, 10).await })
    });
    for (index, call) in futures::future::join_all(calls)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(call.unwrap().unwrap(), (index + 10).to_string());
    }
    let stats = stats(&remote).await;
    assert_eq!(
        (stats.refreshes, stats.refused_refreshes),
        (1, 0),
        "{transport}: {stats:?}"
    );
    upstream.shutdown().await;
}

/// Two gateways (two processes of clients, here two managers) keeping one login renew it once:
/// the second finds the first's token in the login file instead of using the rotated refresh
/// token again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_sharing_a_login_renew_it_once() {
    let http = fixture("--http", &[]).await;
    let folder = tempfile::tempdir().unwrap();
    let logins = Logins::at(folder.path());
    let config = config(json!({ "shared": { "type": "http", "url": http.url } }));
    log_in(&config.servers[0], &logins).await;
    let gateways: Vec<Arc<UpstreamManager>> = (0..2)
        .map(|_| UpstreamManager::start_with_logins(&config, options(), Some(logins.clone())))
        .collect();
    for gateway in &gateways {
        assert_eq!(add(gateway, "shared", 1, 1).await.unwrap(), "2");
    }
    expire_access_tokens(&origin(&http.url)).await.unwrap();
    let calls = (0..8).map(|index| {
        let gateway = gateways[index % 2].clone();
        tokio::spawn(async move { add(&gateway, "shared", index as i64, 1).await })
    });
    for (index, call) in futures::future::join_all(calls)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(call.unwrap().unwrap(), (index + 1).to_string());
    }
    let stats = stats(&http).await;
    assert_eq!(
        (stats.refreshes, stats.refused_refreshes),
        (1, 0),
        "{stats:?}"
    );
    for gateway in gateways {
        gateway.shutdown().await;
    }
}

/// A login the authorization server will not renew (its refresh token revoked) is asked for
/// again, naming `toolweave login`; logging out revokes the token and forgets the login.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_that_cannot_be_renewed_is_asked_for_and_logout_revokes() {
    let http = fixture("--http", &[]).await;
    let folder = tempfile::tempdir().unwrap();
    let logins = Logins::at(folder.path());
    let config = config(json!({ "gone": { "type": "http", "url": http.url } }));
    let server = &config.servers[0];
    log_in(server, &logins).await;
    let upstream = UpstreamManager::start_with_logins(&config, options(), Some(logins.clone()));
    assert_eq!(add(&upstream, "gone", 1, 1).await.unwrap(), "2");

    // Logging out revokes the refresh token: the running gateway's token then fails too.
    assert_eq!(
        logout(server, &logins).await.unwrap(),
        LogoutOutcome::Revoked
    );
    assert_eq!(tokens(folder.path()), Vec::<String>::new());
    assert_eq!(login_status(server, &logins), LoginStatus::None);
    expire_access_tokens(&origin(&http.url)).await.unwrap();
    let error = add(&upstream, "gone", 1, 1).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "server \"gone\" needs a login: toolweave's login for it was removed (`toolweave logout`). Run `toolweave login gone` in a terminal, then call again"
    );
    // A login made meanwhile is found by the next call the server refuses.
    log_in(server, &logins).await;
    assert_eq!(add(&upstream, "gone", 2, 2).await.unwrap(), "4");
    upstream.shutdown().await;

    assert_eq!(
        logout(server, &logins).await.unwrap(),
        LogoutOutcome::Revoked
    );
    assert_eq!(
        logout(server, &logins).await.unwrap(),
        LogoutOutcome::NotLoggedIn
    );
    let stats = stats(&http).await;
    assert_eq!(stats.revocations, 2, "{stats:?}");
}
