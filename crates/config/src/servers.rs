//! The `{"mcpServers": {...}}` file shape, as Claude Code, Cursor and Claude Desktop write it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::expand::{Expanded, MissingVariable, expand};
use crate::oauth::OAuthSettings;
use crate::{Error, Result};

/// Every upstream server toolweave fronts, resolved from one or more files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// Servers in the order of their names (deterministic guest naming depends on it).
    pub servers: Vec<ServerConfig>,
    /// Entries that are present but switched off (`"disabled": true`), kept to be reported.
    pub disabled: Vec<String>,
}

impl Config {
    /// The servers' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.servers
            .iter()
            .map(|server| server.name.as_str())
            .collect()
    }
}

/// One upstream MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The key under `mcpServers`: the guest namespace is derived from it.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// The file this entry came from.
    pub source: PathBuf,
}

/// How an upstream server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on its stdin/stdout.
    Stdio {
        /// Program to run (looked up on `PATH` when it has no slash).
        command: String,
        /// Its arguments, `${VAR}` references resolved.
        args: Vec<Expanded>,
        /// Variables added to the inherited environment, `${VAR}` references resolved.
        env: BTreeMap<String, Expanded>,
        /// Working directory; relative paths are resolved against the config file's folder.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint, e.g. `https://example.com/mcp`; show only its written form.
        url: Expanded,
        /// Extra request headers; their values are never shown.
        headers: BTreeMap<String, Expanded>,
        /// How to log in (`"oauth"`, or Cursor's `"auth"`), when the entry says.
        oauth: Option<OAuthSettings>,
    },
    /// The legacy HTTP+SSE transport.
    Sse {
        /// The SSE endpoint, e.g. `http://localhost:3001/sse`; show only its written form.
        url: Expanded,
        /// Extra request headers; their values are never shown.
        headers: BTreeMap<String, Expanded>,
        /// How to log in (`"oauth"`, or Cursor's `"auth"`), when the entry says.
        oauth: Option<OAuthSettings>,
    },
}

impl Transport {
    /// A short name for messages: `stdio`, `http` or `sse`.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
            Transport::Sse { .. } => "sse",
        }
    }
}

/// The keys a server entry may have. `type` is optional for stdio entries (Claude Desktop and
/// Cursor omit it) and may be `stdio`, `http`, `streamable-http`/`streamableHttp` or `sse`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    /// A file of `NAME=value` lines (VS Code's and Cursor's key); `env` wins over it.
    #[serde(rename = "envFile")]
    env_file: Option<String>,
    cwd: Option<String>,
    url: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    /// How to log in to a remote server (toolweave's and Claude Code's key).
    oauth: Option<Value>,
    /// Cursor's name for `oauth`.
    auth: Option<Value>,
    disabled: Option<bool>,
}

const SERVER_KEYS: &str =
    "type, command, args, env, envFile, cwd, url, headers, oauth, auth, disabled";

/// One entry under `mcpServers`, read but not yet resolved (its variables are not looked up).
#[derive(Debug, Clone)]
pub(crate) struct RawEntry {
    raw: RawServer,
}

impl RawEntry {
    /// Whether the entry says `"disabled": true`.
    pub(crate) fn disabled(&self) -> bool {
        self.raw.disabled == Some(true)
    }

    /// The program of a stdio entry, as written.
    pub(crate) fn command(&self) -> Option<&str> {
        self.raw.command.as_deref()
    }

    /// The arguments of a stdio entry, as written.
    pub(crate) fn args(&self) -> &[String] {
        self.raw.args.as_deref().unwrap_or_default()
    }

    /// The `env` of a stdio entry, as written.
    pub(crate) fn env(&self) -> Option<&BTreeMap<String, String>> {
        self.raw.env.as_ref()
    }
}

/// Checks one entry's name and keys; the error names the file, the server and the key.
pub(crate) fn read_entry(name: &str, entry: &Value, path: &Path) -> Result<RawEntry> {
    let server_error = |message: String| Error::Server {
        path: path.to_path_buf(),
        server: name.to_owned(),
        message,
    };
    if name.trim().is_empty() {
        return Err(server_error("server names must not be empty".to_owned()));
    }
    let raw: RawServer = serde_json::from_value(entry.clone()).map_err(|error| {
        let message = error.to_string();
        if message.starts_with("unknown field") {
            server_error(format!(
                "{message}; the keys a server entry may have are {SERVER_KEYS}"
            ))
        } else {
            server_error(message)
        }
    })?;
    Ok(RawEntry { raw })
}

/// Resolves one read entry (variables, relative `cwd`) into a server of the file at `path`.
pub(crate) fn resolve_entry(
    name: &str,
    entry: RawEntry,
    path: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig> {
    let base = path.parent().unwrap_or(Path::new("."));
    let transport = resolve(entry.raw, base, lookup).map_err(|message| Error::Server {
        path: path.to_path_buf(),
        server: name.to_owned(),
        message,
    })?;
    Ok(ServerConfig {
        name: name.to_owned(),
        transport,
        source: path.to_path_buf(),
    })
}

/// The server map of a config file's top level: `mcpServers`, or VS Code's `servers`.
pub(crate) fn server_map(top: &serde_json::Map<String, Value>) -> Option<&Value> {
    top.get("mcpServers").or_else(|| top.get("servers"))
}

/// Reads and resolves one config file; `${VAR}` references come from toolweave's environment.
pub fn load_file(path: &Path) -> Result<Config> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_str(&text, path)
}

/// Parses the text of a config file; `path` is used in messages and to resolve a relative `cwd`.
/// `${VAR}` references come from toolweave's environment.
pub fn parse_str(text: &str, path: &Path) -> Result<Config> {
    parse_str_with_env(text, path, &|name| std::env::var(name).ok())
}

/// [`parse_str`] with the variables for `${VAR}` references looked up by `lookup`.
pub fn parse_str_with_env(
    text: &str,
    path: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Config> {
    let syntax = |message: String| Error::Syntax {
        path: path.to_path_buf(),
        message,
    };
    let (top, _) = crate::jsonc::parse(text).map_err(syntax)?;
    let Value::Object(top) = top else {
        return Err(syntax(
            "expected a JSON object with an \"mcpServers\" key".to_owned(),
        ));
    };
    // VS Code writes `servers`; every other client writes `mcpServers`.
    let servers = match server_map(&top) {
        Some(servers) => servers,
        None => {
            let keys: Vec<&str> = top.keys().map(String::as_str).collect();
            return Err(syntax(format!(
                "no \"mcpServers\" key (found: {}); write {{\"mcpServers\": {{\"name\": {{\"command\": ...}}}}}}",
                if keys.is_empty() {
                    "nothing".to_owned()
                } else {
                    keys.join(", ")
                }
            )));
        }
    };
    let Value::Object(servers) = servers else {
        return Err(syntax(
            "\"mcpServers\" must be an object mapping server names to entries".to_owned(),
        ));
    };
    let mut config = Config::default();
    for (name, entry) in servers {
        let raw = read_entry(name, entry, path)?;
        if raw.disabled() {
            config.disabled.push(name.clone());
            continue;
        }
        config.servers.push(resolve_entry(name, raw, path, lookup)?);
    }
    config.servers.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(config)
}

/// One value with its references resolved; `key` names it in the message when a variable is unset.
fn expand_key(
    text: &str,
    key: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> std::result::Result<Expanded, String> {
    expand(text, lookup).map_err(|MissingVariable { name }| {
        format!(
            "{key} uses the variable {name}, which is not set in toolweave's environment; set {name} before starting toolweave, or write ${{{name}:-default}} to give a default"
        )
    })
}

/// Header names are HTTP tokens; values may not hold line breaks or other control characters.
/// The message never shows the value (it may be a secret).
fn check_header(name: &str, value: &Expanded) -> std::result::Result<(), String> {
    let token = |character: char| {
        character.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(character)
    };
    if name.is_empty() || !name.chars().all(token) {
        return Err(format!(
            "the header name {name:?} is not a valid HTTP header name; use letters, digits and - only"
        ));
    }
    if value
        .value()
        .chars()
        .any(|character| character.is_control() && character != '\t')
    {
        return Err(format!(
            "the value of header {name:?} holds a line break or another control character{}; HTTP header values cannot",
            if value.uses_variables() {
                " (after its variables were resolved)"
            } else {
                ""
            }
        ));
    }
    Ok(())
}

/// A path from a config file: a relative one is taken from the file's folder `base`.
fn in_config_folder(base: &Path, path: impl Into<PathBuf>) -> PathBuf {
    let path = path.into();
    if path.is_relative() {
        base.join(path)
    } else {
        path
    }
}

fn resolve(
    raw: RawServer,
    base: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> std::result::Result<Transport, String> {
    let kind = raw.kind.as_deref().map(str::to_ascii_lowercase);
    type Remote = (Expanded, BTreeMap<String, Expanded>, Option<OAuthSettings>);
    let remote = || -> std::result::Result<Remote, String> {
        for (key, present) in [
            ("command", raw.command.is_some()),
            ("args", raw.args.is_some()),
            ("env", raw.env.is_some()),
            ("envFile", raw.env_file.is_some()),
            ("cwd", raw.cwd.is_some()),
        ] {
            if present {
                return Err(format!(
                    "\"{key}\" belongs to stdio servers; a remote server has \"url\" and \"headers\""
                ));
            }
        }
        let url = raw
            .url
            .as_deref()
            .ok_or_else(|| "missing \"url\" for a remote server".to_owned())?;
        let url = expand_key(url, "\"url\"", lookup)?;
        if !(url.value().starts_with("http://") || url.value().starts_with("https://")) {
            return Err(format!(
                "\"url\" must start with http:// or https://, got {:?}",
                url.as_written()
            ));
        }
        let mut headers = BTreeMap::new();
        for (name, value) in raw.headers.iter().flatten() {
            let value = expand_key(value, &format!("header {name:?}"), lookup)?;
            check_header(name, &value)?;
            headers.insert(name.clone(), value);
        }
        let oauth = crate::oauth::resolve(raw.oauth.as_ref(), raw.auth.as_ref(), &|text, key| {
            expand_key(text, key, lookup)
        })?;
        Ok((url, headers, oauth))
    };
    match kind.as_deref() {
        None if raw.command.is_none() && raw.url.is_some() => {
            // Cursor and Claude Desktop accept a bare url for streamable HTTP.
            let (url, headers, oauth) = remote()?;
            Ok(Transport::Http {
                url,
                headers,
                oauth,
            })
        }
        None | Some("stdio") => {
            for (key, present) in [
                ("url", raw.url.is_some()),
                ("headers", raw.headers.is_some()),
                ("oauth", raw.oauth.is_some()),
                ("auth", raw.auth.is_some()),
            ] {
                if present {
                    return Err(format!(
                        "\"{key}\" belongs to remote servers; add \"type\": \"http\" or \"sse\", or remove it"
                    ));
                }
            }
            let command = raw.command.ok_or_else(|| {
                "missing \"command\": a stdio server needs the program to run (or give \"type\" and \"url\" for a remote one)".to_owned()
            })?;
            if command.trim().is_empty() {
                return Err("\"command\" is empty".to_owned());
            }
            let cwd = raw.cwd.map(|cwd| in_config_folder(base, cwd));
            let args = raw
                .args
                .unwrap_or_default()
                .iter()
                .enumerate()
                .map(|(index, arg)| expand_key(arg, &format!("\"args\"[{index}]"), lookup))
                .collect::<std::result::Result<_, _>>()?;
            let mut env = BTreeMap::new();
            if let Some(file) = raw.env_file {
                let file = expand_key(&file, "\"envFile\"", lookup)?;
                let path = in_config_folder(base, file.value());
                for (name, value) in crate::envfile::read(&path)? {
                    let value = Expanded::from_env_file(&name, &path, value);
                    env.insert(name, value);
                }
            }
            for (name, value) in raw.env.unwrap_or_default() {
                let value = expand_key(&value, &format!("\"env\".{name}"), lookup)?;
                env.insert(name, value);
            }
            Ok(Transport::Stdio {
                command,
                args,
                env,
                cwd,
            })
        }
        Some("http" | "streamable-http" | "streamablehttp" | "streamable_http") => {
            let (url, headers, oauth) = remote()?;
            Ok(Transport::Http {
                url,
                headers,
                oauth,
            })
        }
        Some("sse") => {
            let (url, headers, oauth) = remote()?;
            Ok(Transport::Sse {
                url,
                headers,
                oauth,
            })
        }
        Some(other) => Err(format!(
            "unknown \"type\": {other:?}; use \"stdio\", \"http\" or \"sse\""
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config> {
        parse_str(text, Path::new("/etc/tw/mcp.json"))
    }

    #[test]
    fn reads_claude_desktop_shape() {
        let config = parse(
            r#"{"mcpServers": {
                "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"A": "1"}},
                "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
                "legacy": {"type": "sse", "url": "http://localhost:3001/sse"},
                "local": {"type": "stdio", "command": "./server", "cwd": "srv"},
                "off": {"command": "x", "disabled": true}
            }}"#,
        )
        .unwrap();
        let names: Vec<_> = config.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["legacy", "local", "memory", "remote"]);
        assert_eq!(config.disabled, ["off"]);
        assert_eq!(
            config.servers[1].transport,
            Transport::Stdio {
                command: "./server".into(),
                args: vec![],
                env: BTreeMap::new(),
                cwd: Some(PathBuf::from("/etc/tw/srv")),
            }
        );
        assert_eq!(config.servers[0].transport.kind(), "sse");
        assert_eq!(config.servers[3].transport.kind(), "http");
    }

    #[test]
    fn reads_vscode_servers_key() {
        let config = parse(r#"{"servers": {"a": {"command": "a"}}}"#).unwrap();
        assert_eq!(config.servers.len(), 1);
    }

    #[test]
    fn env_files_are_read_relative_to_the_config_and_env_wins() {
        let folder = tempfile::tempdir().unwrap();
        let config_path = folder.path().join("mcp.json");
        std::fs::write(
            folder.path().join("server.env"),
            "TOKEN=from-file\nexport MODE=\"debug\"\n",
        )
        .unwrap();
        let config = parse_str(
            r#"{"mcpServers": {"s": {"command": "s", "envFile": "server.env", "env": {"MODE": "fast"}}}}"#,
            &config_path,
        )
        .unwrap();
        let Transport::Stdio { env, .. } = &config.servers[0].transport else {
            panic!("stdio expected");
        };
        let values: Vec<(&str, &str)> = env
            .iter()
            .map(|(name, value)| (name.as_str(), value.value()))
            .collect();
        assert_eq!(values, [("MODE", "fast"), ("TOKEN", "from-file")]);
        assert!(!format!("{env:?}").contains("from-file"), "{env:?}");

        let error_with = |env_file: &str| {
            let text =
                serde_json::json!({"mcpServers": {"s": {"command": "s", "envFile": env_file}}});
            parse_str(&text.to_string(), &config_path)
                .unwrap_err()
                .to_string()
        };
        let error = error_with("missing.env");
        assert!(
            error.contains("server \"s\": cannot read its \"envFile\"")
                && error.contains("missing.env"),
            "{error}"
        );
        std::fs::write(folder.path().join("bad.env"), "A=1\nB\n").unwrap();
        let error = error_with("bad.env");
        assert!(
            error.contains("bad.env, line 2: the line has no \"=\""),
            "{error}"
        );
        let error = parse(
            r#"{"mcpServers": {"r": {"type": "http", "url": "https://x/mcp", "envFile": ".env"}}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("\"envFile\" belongs to stdio servers"),
            "{error}"
        );
    }

    #[test]
    fn errors_name_file_server_and_key() {
        let error = parse(r#"{"mcpServers": {"gh": {"comand": "x"}}}"#).unwrap_err();
        assert_eq!(
            error.to_string(),
            "/etc/tw/mcp.json: server \"gh\": unknown field `comand`, expected one of `type`, `command`, `args`, `env`, `envFile`, `cwd`, `url`, `headers`, `oauth`, `auth`, `disabled`; the keys a server entry may have are type, command, args, env, envFile, cwd, url, headers, oauth, auth, disabled"
        );
        let error = parse(r#"{"mcpServers": {"gh": {"args": []}}}"#).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("/etc/tw/mcp.json: server \"gh\": missing \"command\""),
            "{error}"
        );
        let error =
            parse(r#"{"mcpServers": {"gh": {"type": "websocket", "url": "ws://x"}}}"#).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("unknown \"type\": \"websocket\""),
            "{error}"
        );
        let error = parse(r#"{"mcpServers": {"gh": {"type": "http"}}}"#).unwrap_err();
        assert!(error.to_string().contains("missing \"url\""), "{error}");
        let error =
            parse(r#"{"mcpServers": {"gh": {"command": "x", "url": "http://a"}}}"#).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("\"url\" belongs to remote servers"),
            "{error}"
        );
    }

    fn parse_with(text: &str, variables: &[(&str, &str)]) -> Result<Config> {
        let variables: BTreeMap<String, String> = variables
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        parse_str_with_env(text, Path::new("/etc/tw/mcp.json"), &|name| {
            variables.get(name).cloned()
        })
    }

    #[test]
    fn variables_are_resolved_and_the_written_form_kept() {
        let config = parse_with(
            r#"{"mcpServers": {
                "remote": {"type": "http", "url": "https://${HOST:-example.com}/mcp?key=${API_KEY}",
                           "headers": {"Authorization": "Bearer ${TOKEN}", "X-Team": "env:TEAM"}},
                "local": {"command": "server", "args": ["--token", "${TOKEN}", "${1}"],
                          "env": {"KEY": "${API_KEY}", "PLAIN": "x"}}
            }}"#,
            &[("API_KEY", "k-123"), ("TOKEN", "t-456"), ("TEAM", "blue")],
        )
        .unwrap();
        let Transport::Http { url, headers, .. } = &config.servers[1].transport else {
            panic!("{:?}", config.servers[1]);
        };
        assert_eq!(url.value(), "https://example.com/mcp?key=k-123");
        assert_eq!(
            url.as_written(),
            "https://${HOST:-example.com}/mcp?key=${API_KEY}"
        );
        assert_eq!(headers["Authorization"].value(), "Bearer t-456");
        assert_eq!(headers["X-Team"].value(), "blue");
        let Transport::Stdio { args, env, .. } = &config.servers[0].transport else {
            panic!("{:?}", config.servers[0]);
        };
        let args: Vec<&str> = args.iter().map(Expanded::value).collect();
        assert_eq!(args, ["--token", "t-456", "${1}"]);
        assert_eq!(env["KEY"].value(), "k-123");
        assert_eq!(env["PLAIN"].value(), "x");
        // What a person or a log sees of the config holds no resolved secret.
        let shown = format!("{config:?}");
        for secret in ["k-123", "t-456", "blue"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }

    #[test]
    fn an_unset_variable_names_file_server_key_and_variable() {
        let error = parse_with(
            r#"{"mcpServers": {"gh": {"type": "http", "url": "https://x/mcp",
                "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}}}"#,
            &[],
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "/etc/tw/mcp.json: server \"gh\": header \"Authorization\" uses the variable GITHUB_TOKEN, which is not set in toolweave's environment; set GITHUB_TOKEN before starting toolweave, or write ${GITHUB_TOKEN:-default} to give a default"
        );
        for (entry, key) in [
            (
                r#"{"type": "sse", "url": "http://x/sse?k=${K}"}"#,
                "\"url\" uses the variable K",
            ),
            (
                r#"{"command": "x", "args": ["a", "${K}"]}"#,
                "\"args\"[1] uses the variable K",
            ),
            (
                r#"{"command": "x", "env": {"A": "env:K"}}"#,
                "\"env\".A uses the variable K",
            ),
        ] {
            let text = format!(r#"{{"mcpServers": {{"s": {entry}}}}}"#);
            let error = parse_with(&text, &[]).unwrap_err().to_string();
            assert!(
                error.starts_with("/etc/tw/mcp.json: server \"s\": "),
                "{error}"
            );
            assert!(error.contains(key), "{error}");
        }
    }

    #[test]
    fn header_values_with_line_breaks_are_refused_without_showing_them() {
        let error = parse_with(
            r#"{"mcpServers": {"s": {"type": "http", "url": "http://x/mcp",
                "headers": {"Authorization": "${TOKEN}"}}}}"#,
            &[("TOKEN", "abc\r\nX-Injected: 1")],
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("header \"Authorization\" holds a line break"),
            "{error}"
        );
        assert!(!error.contains("abc"), "{error}");
        let error = parse(r#"{"mcpServers": {"s": {"type": "http", "url": "http://x/mcp", "headers": {"Bad Name": "v"}}}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("\"Bad Name\" is not a valid HTTP header name"),
            "{error}"
        );
    }

    #[test]
    fn remote_entries_say_how_to_log_in() {
        let config = parse_with(
            r#"{"mcpServers": {
                "linear": {"type": "http", "url": "https://mcp.linear.app/mcp",
                           "oauth": {"clientId": "tw-cli", "clientSecret": "${SECRET}", "scopes": "read write"}},
                "cursor": {"url": "https://mcp.example.com/sse", "type": "sse",
                           "auth": {"CLIENT_ID": "cu", "scopes": ["openid"]}},
                "plain": {"url": "https://mcp.example.com/mcp"}
            }}"#,
            &[("SECRET", "s3cret")],
        )
        .unwrap();
        let oauth = |index: usize| match &config.servers[index].transport {
            Transport::Http { oauth, .. } | Transport::Sse { oauth, .. } => oauth.clone(),
            Transport::Stdio { .. } => panic!("remote expected"),
        };
        let linear = oauth(1).unwrap();
        assert_eq!(linear.client_id.unwrap().value(), "tw-cli");
        assert_eq!(linear.client_secret.unwrap().value(), "s3cret");
        assert_eq!(
            linear.scopes,
            Some(vec!["read".to_owned(), "write".to_owned()])
        );
        assert_eq!(oauth(0).unwrap().client_id.unwrap().value(), "cu");
        assert_eq!(oauth(2), None);
        assert!(!format!("{config:?}").contains("s3cret"));

        let error = parse(r#"{"mcpServers": {"s": {"command": "x", "oauth": {"clientId": "a"}}}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("\"oauth\" belongs to remote servers"),
            "{error}"
        );
        let error = parse(
            r#"{"mcpServers": {"s": {"type": "http", "url": "https://x/mcp", "oauth": {"client_id": "a"}}}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with(
                "/etc/tw/mcp.json: server \"s\": \"oauth\": unknown field `client_id`"
            ),
            "{error}"
        );
    }

    #[test]
    fn syntax_errors_have_position() {
        // Comments and trailing commas are read (VS Code writes them); a missing comma is not.
        let config =
            parse("{\"mcpServers\": {\n  // one\n  \"a\": {\"command\": \"x\",},\n}}").unwrap();
        assert_eq!(config.servers.len(), 1);
        let error = parse("{\"mcpServers\": {\n  \"a\": {\"command\": \"x\" \"args\": []}\n}}")
            .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("/etc/tw/mcp.json: not valid JSON at line 2"),
            "{error}"
        );
        let error = parse(r#"{"servers2": {}}"#).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("no \"mcpServers\" key (found: servers2)"),
            "{error}"
        );
        let error = parse(r#"[]"#).unwrap_err();
        assert!(
            error.to_string().contains("expected a JSON object"),
            "{error}"
        );
    }
}
