//! `toolweave login` and `logout` through the real binary, against the fixture serving with
//! `--oauth` (its own authorization server), the person's browser played by `toolweave-fixture
//! browse`: the login kept owner-only, shown by `servers`, `config` and `doctor`, used by `serve`
//! (which names `toolweave login` while there is none), and forgotten and revoked by `logout`;
//! no token or authorization code in any output, at trace level.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use toolweave_testkit::fixture_http::RemoteFixture;
use toolweave_testkit::fixture_oauth::stats_of;
use toolweave_testkit::harness::Toolweave;

use super::toolweave;

/// A config with the fixture at `url` as server `fx`, and a config directory for the logins.
struct Setup {
    folder: tempfile::TempDir,
    config: PathBuf,
}

impl Setup {
    fn new(entry: Value) -> Self {
        let folder = tempfile::tempdir().unwrap();
        let config = folder.path().join("mcp.json");
        std::fs::write(
            &config,
            json!({ "mcpServers": { "fx": entry } }).to_string(),
        )
        .unwrap();
        Self { folder, config }
    }

    fn config_home(&self) -> PathBuf {
        self.folder.path().join("config")
    }

    fn logins(&self) -> PathBuf {
        self.config_home().join("toolweave/logins")
    }

    /// Runs `toolweave ARGS --config CONFIG`, logging at trace level.
    fn run(&self, arguments: &[&str], stdin: &str) -> Output {
        use std::io::Write;
        let mut child = std::process::Command::new(toolweave())
            .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
            .args(arguments)
            .arg("--config")
            .arg(&self.config)
            .env("XDG_CONFIG_HOME", self.config_home())
            .env("TOOLWEAVE_LOG", "trace")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    fn login(&self) -> Output {
        let browser = format!("{} browse", toolweave_testkit::fixture_binary().display());
        self.run(&["login", "fx", "--browser-command", &browser], "")
    }

    /// The access and refresh tokens kept.
    fn tokens(&self) -> Vec<String> {
        let mut tokens = Vec::new();
        for entry in std::fs::read_dir(self.logins()).unwrap() {
            let path = entry.unwrap().path();
            if path
                .extension()
                .is_some_and(|extension| extension == "json")
            {
                let login: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
                for name in ["access_token", "refresh_token"] {
                    if let Some(token) = login["grant"]["token"][name].as_str() {
                        tokens.push(token.to_owned());
                    }
                }
            }
        }
        tokens
    }
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn origin(url: &str) -> String {
    let rest = url.strip_prefix("http://").unwrap();
    format!("http://{}", rest.split('/').next().unwrap())
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_keeps_an_owner_only_token_that_serve_uses_and_logout_revokes() {
    let fixture = RemoteFixture::start(&["--http", "127.0.0.1:0", "--oauth"])
        .await
        .unwrap();
    let setup = Setup::new(json!({ "type": "http", "url": fixture.url }));
    let mut outputs = Vec::new();

    // Without a login: `servers` says it is needed, and a call from code names the command.
    let servers = setup.run(&["servers"], "");
    assert!(!servers.status.success());
    let (stdout, _) = text(&servers);
    assert!(
        stdout.starts_with("fx (http): FAILED after ")
            && stdout.ends_with(": server \"fx\" needs a login: it answered HTTP 401: it wants an OAuth login, and toolweave has none for it. Run `toolweave login fx` in a terminal, then call again\n"),
        "{stdout}"
    );
    outputs.push(servers);
    let gateway = Toolweave::start_with_env(
        toolweave(),
        &setup.config,
        &["--isolation", "in-process"],
        &[("XDG_CONFIG_HOME", setup.config_home().to_str().unwrap())],
    )
    .await
    .unwrap();
    let code = "return await tools.fx.add({ a: 2, b: 3 })";
    let refused = gateway.execute(code, "javascript").await.unwrap();
    assert!(refused.is_error, "{}", refused.text);
    assert!(
        refused.text.contains("server \"fx\" needs a login")
            && refused
                .text
                .contains("Run `toolweave login fx` in a terminal, then call again"),
        "{}",
        refused.text
    );

    // The login: the address printed for the person, the browser back on the loopback listener.
    let login = setup.login();
    let (stdout, stderr) = text(&login);
    assert!(login.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with(
            "Logged in to \"fx\" (http, scopes fixture:use): 21 tools; the token expires "
        ) && stdout.ends_with(" and is renewed on use.\n"),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!(
            "To log in to \"fx\", open this address in a browser:\n\n  {}/authorize?",
            origin(&fixture.url)
        )),
        "{stderr}"
    );
    outputs.push(login);
    assert_eq!(mode(&setup.logins()), 0o700);
    for entry in std::fs::read_dir(setup.logins()).unwrap() {
        assert_eq!(mode(&entry.unwrap().path()), 0o600);
    }
    let tokens = setup.tokens();
    assert_eq!(tokens.len(), 2);

    // The running gateway takes the login on a later call (after the backoff of a failed start).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let answered = gateway.execute(code, "javascript").await.unwrap();
    assert_eq!(answered.value().unwrap(), &json!("5"), "{}", answered.text);
    gateway.stop().await.unwrap();

    let servers = setup.run(&["servers", "--json"], "");
    assert!(servers.status.success(), "{:?}", text(&servers));
    let report: Value = serde_json::from_slice(&servers.stdout).unwrap();
    let login_state = &report["servers"][0]["login"];
    assert_eq!(login_state["state"], "logged-in");
    assert_eq!(login_state["renewable"], true);
    assert!(login_state["expires_at"].as_u64().is_some());
    outputs.push(servers);
    let config = setup.run(&["config"], "");
    let (stdout, _) = text(&config);
    assert!(
        stdout.contains("fx                   used (http; logged in, token expires ")
            && stdout.contains(", renewed on use)"),
        "{stdout}"
    );
    outputs.push(config);
    let doctor = setup.run(&["doctor"], "");
    let (stdout, _) = text(&doctor);
    assert!(
        stdout.contains("fx (http): ready, 21 tools (")
            && stdout.contains("; logged in, token expires "),
        "{stdout}"
    );
    outputs.push(doctor);

    let logout = setup.run(&["logout", "fx"], "");
    let (stdout, stderr) = text(&logout);
    assert!(logout.status.success(), "{stderr}");
    assert_eq!(
        stdout,
        "Logged out of \"fx\": the login is forgotten and its token revoked.\n"
    );
    outputs.push(logout);
    assert_eq!(
        std::fs::read_dir(setup.logins())
            .unwrap()
            .filter(|entry| {
                entry
                    .as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|extension| extension == "json")
            })
            .count(),
        0
    );
    let again = setup.run(&["logout", "fx"], "");
    assert_eq!(
        text(&again).0,
        "toolweave kept no login for \"fx\": nothing to do.\n"
    );
    let servers = setup.run(&["servers", "--json"], "");
    assert!(!servers.status.success());
    let report: Value = serde_json::from_slice(&servers.stdout).unwrap();
    assert_eq!(report["servers"][0]["login"], json!({ "state": "needed" }));
    outputs.push(servers);

    let stats = stats_of(&origin(&fixture.url)).await.unwrap();
    assert_eq!((stats.logins, stats.revocations), (1, 1), "{stats:?}");
    // Nothing printed or logged holds a token or the authorization code.
    for output in &outputs {
        let (stdout, stderr) = text(output);
        for token in &tokens {
            assert!(!stdout.contains(token.as_str()) && !stderr.contains(token.as_str()));
        }
        assert!(
            !stderr.contains("\"code-"),
            "the authorization code is logged:\n{stderr}"
        );
    }
    // The login itself was logged at trace level, so its silence about secrets means something.
    assert!(
        text(&outputs[1]).1.contains(" TRACE "),
        "{}",
        text(&outputs[1]).1
    );
}

#[test]
fn login_names_what_it_cannot_do() {
    let stdio = Setup::new(json!({ "command": "some-server" }));
    let output = stdio.run(&["login", "fx"], "");
    assert!(!output.status.success());
    assert_eq!(
        text(&output).1.lines().last().unwrap(),
        "toolweave: server \"fx\" is a stdio server: it takes its credentials from \"env\" in its entry, not from a login"
    );
    let header = Setup::new(
        json!({ "type": "http", "url": "http://127.0.0.1:9/mcp", "headers": { "Authorization": "Bearer x" } }),
    );
    let output = header.run(&["login", "fx"], "");
    assert_eq!(
        text(&output).1.lines().last().unwrap(),
        format!(
            "toolweave: server \"fx\" sends its own \"Authorization\" header (\"headers\" in {}); toolweave logs in only to servers without one: remove the header to log in",
            header.config.display()
        )
    );
    let output = header.run(&["login", "other"], "");
    assert_eq!(
        text(&output).1.lines().last().unwrap(),
        "toolweave: no server named \"other\" is configured (configured: fx); `toolweave config` shows what was found"
    );
    let output = header.run(&["logout", "fx"], "");
    assert!(!output.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_to_a_server_that_wants_none_changes_nothing() {
    let fixture = RemoteFixture::start(&["--http", "127.0.0.1:0"])
        .await
        .unwrap();
    let setup = Setup::new(json!({ "type": "http", "url": fixture.url }));
    let output = setup.login();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        stdout,
        "\"fx\" lets toolweave in without a login (21 tools) and names no authorization server: nothing to do.\n"
    );
    assert!(!setup.logins().exists() || setup.tokens().is_empty());
    let servers = setup.run(&["servers"], "");
    assert!(
        text(&servers).0.ends_with("; no login needed\n"),
        "{}",
        text(&servers).0
    );
}
