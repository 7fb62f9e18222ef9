//! `toolweave login` and `toolweave logout`: the person's side of OAuth for remote servers (the
//! flow itself is `toolweave_upstream::login`), and the one-line login state `servers`, `doctor`
//! and `config` show.

use std::io::Write;
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};
use clap::Args;
use toolweave_config::{Config, Limits, ServerConfig};
use toolweave_upstream::{
    LoginOptions, LoginOutcome, LoginStatus, Logins, LogoutOutcome, login_status,
};

/// How long a login waits for the browser to come back, unless told.
const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug, Args)]
pub(crate) struct LoginArgs {
    /// The server's name, as `toolweave config` lists it.
    server: String,
    /// An MCP config file; without it, the files MCP clients write are discovered (see
    /// `toolweave config`).
    #[arg(long, short = 'c', value_name = "FILE", env = "TOOLWEAVE_CONFIG")]
    config: Option<PathBuf>,
    /// The command that opens the login page, given its URL as the last argument (split on
    /// spaces). Without it: xdg-open (open on macOS) when there is a display, else the URL is
    /// only printed.
    #[arg(long, value_name = "COMMAND")]
    browser_command: Option<String>,
    /// How long to wait for the browser to come back.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_LOGIN_TIMEOUT.as_millis() as u64)]
    timeout_ms: u64,
    /// Time the server may take to answer when toolweave connects to it.
    #[arg(long, value_name = "MS", default_value_t = Limits::default().startup_timeout.as_millis() as u64)]
    startup_timeout_ms: u64,
}

#[derive(Debug, Args)]
pub(crate) struct LogoutArgs {
    /// The server's name, as `toolweave config` lists it.
    server: String,
    /// An MCP config file; without it, the files MCP clients write are discovered (see
    /// `toolweave config`).
    #[arg(long, short = 'c', value_name = "FILE", env = "TOOLWEAVE_CONFIG")]
    config: Option<PathBuf>,
}

/// Where logins are kept, or why there is nowhere.
fn logins() -> Result<Logins> {
    Logins::from_environment().ok_or_else(|| toolweave_upstream::LoginError::NoStore.into())
}

/// The server named `name` in the config.
fn find<'a>(config: &'a Config, name: &str) -> Result<&'a ServerConfig> {
    match config.servers.iter().find(|server| server.name == name) {
        Some(server) => Ok(server),
        None if config.disabled.iter().any(|disabled| disabled == name) => bail!(
            "server \"{name}\" is disabled in the config (\"disabled\": true); enable it to log in"
        ),
        None => bail!(
            "no server named \"{name}\" is configured (configured: {}); `toolweave config` shows what was found",
            config.names().join(", ")
        ),
    }
}

pub(crate) async fn login(args: LoginArgs) -> Result<ExitCode> {
    if args.timeout_ms == 0 || args.startup_timeout_ms == 0 {
        bail!("--timeout-ms and --startup-timeout-ms must be greater than 0");
    }
    let config = crate::machine::load_config(args.config.as_deref())?;
    let server = find(&config, &args.server)?;
    let logins = logins()?;
    let browser = Browser::choose(args.browser_command.as_deref())?;
    let name = server.name.clone();
    let mut open = |url: &str| {
        eprintln!("To log in to \"{name}\", open this address in a browser:\n\n  {url}\n");
        browser.open(url);
    };
    let outcome = toolweave_upstream::login(
        server,
        &logins,
        LoginOptions {
            timeout: Duration::from_millis(args.timeout_ms),
            startup_timeout: Duration::from_millis(args.startup_timeout_ms),
            open: &mut open,
        },
    )
    .await?;
    let mut out = std::io::stdout().lock();
    match outcome {
        LoginOutcome::LoggedIn {
            tools,
            scopes,
            expires_at,
        } => {
            let scopes = if scopes.is_empty() {
                String::new()
            } else {
                format!(", scopes {}", scopes.join(" "))
            };
            let expiry = expires_at
                .map(|at| {
                    format!(
                        "; the token expires {} and is renewed on use",
                        toolweave_upstream::format_time(at)
                    )
                })
                .unwrap_or_default();
            writeln!(
                out,
                "Logged in to \"{name}\" ({}{scopes}): {} tool{}{expiry}.",
                server.transport.kind(),
                tools,
                if tools == 1 { "" } else { "s" },
            )?;
        }
        LoginOutcome::NotNeeded { tools } => writeln!(
            out,
            "\"{name}\" lets toolweave in without a login ({tools} tool{}) and names no authorization server: nothing to do.",
            if tools == 1 { "" } else { "s" }
        )?,
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn logout(args: LogoutArgs) -> Result<ExitCode> {
    let config = crate::machine::load_config(args.config.as_deref())?;
    let server = find(&config, &args.server)?;
    let logins = logins()?;
    let name = &server.name;
    let line = match toolweave_upstream::logout(server, &logins).await? {
        LogoutOutcome::Revoked => {
            format!("Logged out of \"{name}\": the login is forgotten and its token revoked.")
        }
        LogoutOutcome::NoRevocation => format!(
            "Logged out of \"{name}\": the login is forgotten; its authorization server takes no revocation, so the token it issued stays valid until it expires."
        ),
        LogoutOutcome::NotRevoked(why) => format!(
            "Logged out of \"{name}\": the login is forgotten, but revoking its token failed ({why}); it stays valid until it expires."
        ),
        LogoutOutcome::NotLoggedIn => {
            format!("toolweave kept no login for \"{name}\": nothing to do.")
        }
    };
    writeln!(std::io::stdout().lock(), "{line}")?;
    Ok(ExitCode::SUCCESS)
}

/// How the login page is opened.
enum Browser {
    /// Run this program with these arguments and the URL.
    Command { program: String, args: Vec<String> },
    /// Only print the URL (no display to open a browser on).
    PrintOnly,
}

impl Browser {
    fn choose(command: Option<&str>) -> Result<Self> {
        if let Some(command) = command {
            let mut words = command.split_whitespace().map(str::to_owned);
            let program = words
                .next()
                .context("--browser-command is empty; give the program that opens a URL")?;
            return Ok(Self::Command {
                program,
                args: words.collect(),
            });
        }
        let program = if cfg!(target_os = "macos") {
            Some("open")
        } else if std::env::var_os("DISPLAY").is_some()
            || std::env::var_os("WAYLAND_DISPLAY").is_some()
        {
            Some("xdg-open")
        } else {
            None
        };
        Ok(match program {
            Some(program) => Self::Command {
                program: program.to_owned(),
                args: Vec::new(),
            },
            None => Self::PrintOnly,
        })
    }

    /// Starts the browser on `url`; whether it fails is said, not waited for.
    fn open(&self, url: &str) {
        let Self::Command { program, args } = self else {
            return;
        };
        let started = tokio::process::Command::new(program)
            .args(args)
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(false)
            .spawn();
        let program = program.clone();
        match started {
            Ok(mut child) => {
                tokio::spawn(async move {
                    if let Ok(status) = child.wait().await
                        && !status.success()
                    {
                        eprintln!(
                            "toolweave: the browser command {program:?} ended with {status}; open the address above yourself"
                        );
                    }
                });
            }
            Err(error) => eprintln!(
                "toolweave: cannot run the browser command {program:?} ({error}); open the address above yourself"
            ),
        }
    }
}

/// A server's login state, as `servers` and `doctor` show it after connecting: `Some` for a
/// remote server toolweave logs in to (`needs_login`: the server refused for want of one).
pub(crate) fn login_state(
    server: &ServerConfig,
    ready: bool,
    needs_login: bool,
) -> Option<LoginState> {
    let status = match Logins::from_environment() {
        Some(logins) => login_status(server, &logins),
        None => LoginStatus::None,
    };
    let (state, line) = match (&status, needs_login) {
        (LoginStatus::NotUsed, _) => return None,
        (_, true) => (
            "needed",
            format!("login needed: `toolweave login {}`", server.name),
        ),
        (LoginStatus::LoggedIn { .. }, false) => ("logged-in", status.describe()?),
        (LoginStatus::None, false) if ready => ("not-needed", "no login needed".to_owned()),
        (LoginStatus::Unreadable(_) | LoginStatus::None, false) => return None,
    };
    let (expires_at, renewable) = match status {
        LoginStatus::LoggedIn {
            expires_at,
            renewable,
            ..
        } if !needs_login => (
            expires_at.and_then(|at| {
                at.duration_since(SystemTime::UNIX_EPOCH)
                    .ok()
                    .map(|at| at.as_secs())
            }),
            Some(renewable),
        ),
        _ => (None, None),
    };
    Some(LoginState {
        state,
        expires_at,
        renewable,
        line,
    })
}

/// A remote server's login, as `servers` shows it.
#[derive(Debug, serde::Serialize)]
pub(crate) struct LoginState {
    /// `needed`, `logged-in` or `not-needed`.
    state: &'static str,
    /// When the access token expires, in seconds since the Unix epoch, when the server said.
    #[serde(skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
    /// Whether toolweave renews it without the person.
    #[serde(skip_serializing_if = "Option::is_none")]
    renewable: Option<bool>,
    /// The same for people: `logged in, token expires ... (renewed on use)`.
    #[serde(skip)]
    line: String,
}

impl LoginState {
    /// The state for people.
    pub(crate) fn line(&self) -> &str {
        &self.line
    }
}

/// What `config` says of a remote server's login (without connecting): `; logged in, ...` or
/// `; not logged in`, nothing for a server toolweave does not log in to.
pub(crate) fn kept_login(server: &ServerConfig) -> String {
    let Some(logins) = Logins::from_environment() else {
        return String::new();
    };
    match login_status(server, &logins).describe() {
        Some(line) => format!("; {line}"),
        None => String::new(),
    }
}
