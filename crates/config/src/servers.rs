//! The `{"mcpServers": {...}}` file shape, as Claude Code, Cursor and Claude Desktop write it.
//!
//! Clients write keys of their own into server entries (Cursor's `auth`, VS Code's `dev`).
//! Whose file an entry is in ([`Owner`]) decides what such a key means: in a client's file it is
//! ignored with a note, since the entry works in that client; in a `--config` file, written for
//! toolweave, a key it does not know is an error (most likely a misspelling), except the keys
//! other clients are known to write. A key that means something toolweave has is used: `timeout`
//! is the server's tool-call timeout. `toolTimeouts`, toolweave's own, gives particular tools
//! timeouts of their own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::expand::{Expanded, MissingVariable, expand};
use crate::oauth::OAuthSettings;
use crate::sandbox::{Boxes, SANDBOX_KEY, Sandbox};
use crate::{Error, Result};

/// Every upstream server toolweave fronts, resolved from one or more files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// Servers in the order of their names (deterministic guest naming depends on it).
    pub servers: Vec<ServerConfig>,
    /// Entries that are present but switched off (`"disabled": true`), kept to be reported.
    pub disabled: Vec<String>,
    /// What was ignored in the entries of these servers, one note per key: for a warning on
    /// stderr and `toolweave config`.
    pub notes: Vec<Note>,
}

/// A key of a server's entry that toolweave ignores, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Note {
    /// The file the entry is in.
    pub path: PathBuf,
    /// The server's name.
    pub server: String,
    /// What was ignored and why: `"auth" is ignored: ...`.
    pub text: String,
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: server \"{}\": {}",
            self.path.display(),
            self.server,
            self.text
        )
    }
}

impl Config {
    /// Gives the settings file's boxes to the stdio servers whose entries have no `"sandbox"`
    /// key of their own: a server's box by its name, else the box for every server. Returns the
    /// names `boxes` gives a box to that are no stdio server here (a remote server has no
    /// process to box), for a warning: a box that boxes nothing must not pass unnoticed.
    pub fn give_boxes(&mut self, boxes: &Boxes) -> Vec<String> {
        for server in &mut self.servers {
            if let Transport::Stdio {
                sandbox,
                sandbox_written: false,
                ..
            } = &mut server.transport
            {
                *sandbox = match boxes.by_server.get(&server.name) {
                    Some(given) => given.clone(),
                    None => boxes.every.clone(),
                };
            }
        }
        boxes
            .by_server
            .keys()
            .filter(|name| {
                !self.servers.iter().any(|server| {
                    &server.name == *name && matches!(server.transport, Transport::Stdio { .. })
                })
            })
            .cloned()
            .collect()
    }

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
    /// The time one tool call to this server may take, from the entry's `timeout`; `None` keeps
    /// the default (`--tool-timeout-ms`).
    pub tool_timeout: Option<Duration>,
    /// Call timeouts of particular tools (`toolTimeouts`), by the tool's name as the server lists
    /// it; they take the place of `tool_timeout` (and of `--tool-timeout-ms`) for those tools.
    pub tool_timeouts: BTreeMap<String, Duration>,
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
        /// The box it runs in (`"sandbox"`, or the settings file's), if any.
        sandbox: Option<Sandbox>,
        /// Whether the entry has a `"sandbox"` key of its own (`false` included): the settings
        /// file's boxes are for the entries without one ([`Config::give_boxes`]).
        sandbox_written: bool,
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
/// `timeout` is read apart ([`tool_timeout`]).
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
    /// Tool name → milliseconds one call to it may take.
    #[serde(rename = "toolTimeouts")]
    tool_timeouts: Option<BTreeMap<String, Value>>,
    /// The box a stdio server runs in (see [`crate::sandbox`]).
    sandbox: Option<Value>,
}

/// The keys [`RawServer`] reads.
const RAW_KEYS: [&str; 13] = [
    "type",
    "command",
    "args",
    "env",
    "envFile",
    "cwd",
    "url",
    "headers",
    "oauth",
    "auth",
    "disabled",
    "toolTimeouts",
    SANDBOX_KEY,
];

/// The key whose value is the server's tool-call timeout, in milliseconds.
const TIMEOUT_KEY: &str = "timeout";

/// Every key toolweave reads in a server entry, for messages: `type, command, ..., timeout`.
fn server_keys() -> String {
    let mut keys = RAW_KEYS.to_vec();
    keys.push(TIMEOUT_KEY);
    keys.join(", ")
}

/// Keys MCP clients write into server entries for their own use, and why toolweave does without
/// them. They are ignored with a note, in a `--config` file too.
const CLIENT_KEYS: [(&str, &str); 9] = [
    (
        "headersHelper",
        "it is a command Claude Code runs for headers, which toolweave does not run; give the headers in \"headers\" (with ${VAR})",
    ),
    ("dev", "it is VS Code's development mode (watch and debug)"),
    (
        "gallery",
        "it is VS Code's record of where it installed the server from",
    ),
    (
        "version",
        "it is VS Code's record of the version it installed",
    ),
    (
        "autoApprove",
        "it lists the tools Cline calls without asking; toolweave pre-approves destructive tools with --approve (or \"approve\" in its settings file)",
    ),
    (
        "alwaysAllow",
        "it lists the tools Roo Code calls without asking; toolweave pre-approves destructive tools with --approve (or \"approve\" in its settings file)",
    ),
    (
        "disabledTools",
        "it lists the tools Cline leaves out; toolweave keeps tools from code with --deny (or \"deny\" in its settings file)",
    ),
    (
        "includeTools",
        "it lists the tools Gemini CLI lets through; toolweave decides with --allow (or \"allow\" in its settings file)",
    ),
    (
        "excludeTools",
        "it lists the tools Gemini CLI leaves out; toolweave keeps tools from code with --deny (or \"deny\" in its settings file)",
    ),
];

/// Whose file a server entry is in: that decides what a key toolweave does not use means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    /// A `--config` file, written for toolweave: a key it does not know is an error (most likely
    /// a misspelling), except the keys other clients are known to write ([`CLIENT_KEYS`]).
    Toolweave,
    /// A file an MCP client writes, found by discovery: the entry works in that client, so a key
    /// toolweave does not use is ignored with a note.
    Client,
}

/// One entry under `mcpServers`, read but not yet resolved (its variables are not looked up).
#[derive(Debug, Clone)]
pub(crate) struct RawEntry {
    raw: RawServer,
    /// The entry's `timeout`, when it is one toolweave can use.
    tool_timeout: Option<Duration>,
    /// What was ignored in the entry, one line per key: `"auth" is ignored: ...`.
    notes: Vec<String>,
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

    /// What was ignored in the entry, one line per key.
    pub(crate) fn notes(&self) -> &[String] {
        &self.notes
    }
}

/// Checks one entry's name and keys; the error names the file, the server and the key. Keys
/// toolweave does not use are ignored with a note, or refused, as `owner` decides.
pub(crate) fn read_entry(name: &str, entry: &Value, path: &Path, owner: Owner) -> Result<RawEntry> {
    let server_error = |message: String| Error::Server {
        path: path.to_path_buf(),
        server: name.to_owned(),
        message,
    };
    if name.trim().is_empty() {
        return Err(server_error("server names must not be empty".to_owned()));
    }
    let Value::Object(keys) = entry else {
        return Err(server_error(format!(
            "an entry must be an object such as {{\"command\": \"...\", \"args\": [...]}}, not {}",
            crate::json_kind(entry)
        )));
    };
    let mut known = serde_json::Map::new();
    let mut timeout = None;
    let mut notes = Vec::new();
    for (key, value) in keys {
        if RAW_KEYS.contains(&key.as_str()) {
            known.insert(key.clone(), value.clone());
        } else if key == TIMEOUT_KEY {
            match (tool_timeout(value), owner) {
                (Ok(limit), _) => timeout = Some(limit),
                (Err(why), Owner::Toolweave) => {
                    return Err(server_error(format!("\"timeout\": {why}")));
                }
                (Err(why), Owner::Client) => notes.push(format!("\"timeout\" is not used: {why}")),
            }
        } else if let Some((_, why)) = CLIENT_KEYS.iter().find(|(client_key, _)| client_key == key)
        {
            notes.push(format!("\"{key}\" is ignored: {why}"));
        } else {
            let hint = match closest_key(key) {
                Some(meant) => format!(" (did you mean \"{meant}\"?)"),
                None => String::new(),
            };
            match owner {
                Owner::Toolweave => {
                    return Err(server_error(format!(
                        "unknown key \"{key}\"{hint}; the keys a server entry may have are {}",
                        server_keys()
                    )));
                }
                Owner::Client => notes.push(format!(
                    "\"{key}\" is ignored: toolweave does not know it{hint}"
                )),
            }
        }
    }
    let raw: RawServer = serde_json::from_value(Value::Object(known))
        .map_err(|error| server_error(error.to_string()))?;
    Ok(RawEntry {
        raw,
        tool_timeout: timeout,
        notes,
    })
}

/// The shortest tool-call timeout an entry may set: anything shorter is almost certainly a
/// number of seconds (as Cline writes `timeout`) read as milliseconds.
const MIN_TOOL_TIMEOUT: Duration = Duration::from_secs(1);

/// An entry's `timeout`: milliseconds, as Claude Code and Cursor read it. `Err` says why it
/// cannot be used, starting with the value.
fn tool_timeout(value: &Value) -> std::result::Result<Duration, String> {
    let whole = |millis: f64| millis.fract() == 0.0 && millis >= 0.0;
    let millis = value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|millis| whole(*millis))
            .map(|millis| millis as u64)
    });
    let Some(millis) = millis else {
        return Err(format!(
            "{value} is not a whole number of milliseconds; write 60000 for a minute"
        ));
    };
    let limit = Duration::from_millis(millis);
    if limit < MIN_TOOL_TIMEOUT {
        return Err(format!(
            "{millis} is under a second; toolweave reads it in milliseconds, as Claude Code and Cursor do, so write {} for {millis} seconds",
            millis.saturating_mul(1000)
        ));
    }
    Ok(limit)
}

/// The key toolweave reads that `key` is most likely a misspelling of.
fn closest_key(key: &str) -> Option<&'static str> {
    let lower = key.to_ascii_lowercase();
    RAW_KEYS
        .iter()
        .chain([&TIMEOUT_KEY])
        .map(|known| (*known, edit_distance(&lower, &known.to_ascii_lowercase())))
        .filter(|(known, distance)| *distance <= 2 && *distance < known.len() / 2 + 1)
        .min_by_key(|(_, distance)| *distance)
        .map(|(known, _)| known)
}

/// Levenshtein distance, in characters.
fn edit_distance(left: &str, right: &str) -> usize {
    let right: Vec<char> = right.chars().collect();
    let mut previous: Vec<usize> = (0..=right.len()).collect();
    for (row, left_char) in left.chars().enumerate() {
        let mut current = vec![row + 1];
        for (column, right_char) in right.iter().enumerate() {
            let substitution = previous[column] + usize::from(left_char != *right_char);
            current.push(
                substitution
                    .min(previous[column + 1] + 1)
                    .min(current[column] + 1),
            );
        }
        previous = current;
    }
    previous[right.len()]
}

/// Resolves one read entry (variables, relative `cwd`) into a server of the file at `path`.
pub(crate) fn resolve_entry(
    name: &str,
    entry: RawEntry,
    path: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig> {
    let RawEntry {
        raw, tool_timeout, ..
    } = entry;
    let server_error = |message| Error::Server {
        path: path.to_path_buf(),
        server: name.to_owned(),
        message,
    };
    let tool_timeouts = tool_timeouts(raw.tool_timeouts.as_ref()).map_err(server_error)?;
    let transport = resolve(raw, path, lookup).map_err(server_error)?;
    Ok(ServerConfig {
        name: name.to_owned(),
        transport,
        source: path.to_path_buf(),
        tool_timeout,
        tool_timeouts,
    })
}

/// An entry's `toolTimeouts`: each value a whole number of milliseconds, at least 1.
fn tool_timeouts(
    written: Option<&BTreeMap<String, Value>>,
) -> std::result::Result<BTreeMap<String, Duration>, String> {
    let mut timeouts = BTreeMap::new();
    for (tool, value) in written.into_iter().flatten() {
        let millis = value.as_u64().filter(|millis| *millis > 0).ok_or_else(|| {
            format!(
                "\"toolTimeouts\".{tool:?} is {value}; give the milliseconds one call to that tool may take, as a whole number such as 120000 for two minutes"
            )
        })?;
        timeouts.insert(tool.clone(), Duration::from_millis(millis));
    }
    Ok(timeouts)
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

/// Parses the text of a `--config` file (toolweave's own: a key it does not know is an error);
/// `path` is used in messages and to resolve a relative `cwd`. `${VAR}` references come from
/// toolweave's environment.
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
        let raw = read_entry(name, entry, path, Owner::Toolweave)?;
        if raw.disabled() {
            config.disabled.push(name.clone());
            continue;
        }
        config.notes.extend(raw.notes().iter().map(|text| Note {
            path: path.to_path_buf(),
            server: name.clone(),
            text: text.clone(),
        }));
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

/// The transport an entry describes, by its `"type"` (none: stdio, or a bare url).
fn resolve(
    raw: RawServer,
    path: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> std::result::Result<Transport, String> {
    let kind = raw.kind.as_deref().map(str::to_ascii_lowercase);
    match kind.as_deref() {
        None if raw.command.is_none() && raw.url.is_some() => {
            // Cursor and Claude Desktop accept a bare url for streamable HTTP.
            let (url, headers, oauth) = resolve_remote(&raw, lookup)?;
            Ok(Transport::Http {
                url,
                headers,
                oauth,
            })
        }
        None | Some("stdio") => resolve_stdio(raw, path, lookup),
        Some("http" | "streamable-http" | "streamablehttp" | "streamable_http") => {
            let (url, headers, oauth) = resolve_remote(&raw, lookup)?;
            Ok(Transport::Http {
                url,
                headers,
                oauth,
            })
        }
        Some("sse") => {
            let (url, headers, oauth) = resolve_remote(&raw, lookup)?;
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

/// A remote server's url, headers and OAuth settings.
type Remote = (Expanded, BTreeMap<String, Expanded>, Option<OAuthSettings>);

/// What a remote entry (`"http"`, `"sse"`) says; keys of stdio servers are refused.
fn resolve_remote(
    raw: &RawServer,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> std::result::Result<Remote, String> {
    for (key, present) in [
        ("command", raw.command.is_some()),
        ("args", raw.args.is_some()),
        ("env", raw.env.is_some()),
        ("envFile", raw.env_file.is_some()),
        ("cwd", raw.cwd.is_some()),
        (SANDBOX_KEY, raw.sandbox.is_some()),
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
}

/// What a stdio entry says: the command, its arguments, environment and folder; keys of
/// remote servers are refused.
/// A stdio entry of the file `path`.
fn resolve_stdio(
    raw: RawServer,
    path: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> std::result::Result<Transport, String> {
    let base = path.parent().unwrap_or(Path::new("."));
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
    let sandbox = match &raw.sandbox {
        Some(value) => crate::sandbox::read(value, "\"sandbox\"", base, &|text, key| {
            expand_key(text, key, lookup).map(|expanded| expanded.value().to_owned())
        })?
        .map(|sandbox| Sandbox {
            place: format!("its entry in {}", path.display()),
            ..sandbox
        }),
        None => None,
    };
    Ok(Transport::Stdio {
        command,
        args,
        env,
        cwd,
        sandbox,
        sandbox_written: raw.sandbox.is_some(),
    })
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
                sandbox: None,
                sandbox_written: false,
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
            "/etc/tw/mcp.json: server \"gh\": unknown key \"comand\" (did you mean \"command\"?); the keys a server entry may have are type, command, args, env, envFile, cwd, url, headers, oauth, auth, disabled, toolTimeouts, sandbox, timeout"
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

    #[test]
    fn a_timeout_is_the_server_s_tool_call_timeout_in_milliseconds() {
        let config = parse(
            r#"{"mcpServers": {
                "slow": {"command": "x", "timeout": 600000},
                "whole": {"type": "http", "url": "https://x/mcp", "timeout": 1.5e4},
                "plain": {"command": "y"}
            }}"#,
        )
        .unwrap();
        let timeouts: Vec<(&str, Option<Duration>)> = config
            .servers
            .iter()
            .map(|server| (server.name.as_str(), server.tool_timeout))
            .collect();
        assert_eq!(
            timeouts,
            [
                ("plain", None),
                ("slow", Some(Duration::from_secs(600))),
                ("whole", Some(Duration::from_secs(15))),
            ]
        );
        assert!(config.notes.is_empty(), "{:?}", config.notes);
        for (timeout, expected) in [
            (
                "60",
                "\"timeout\": 60 is under a second; toolweave reads it in milliseconds, as Claude Code and Cursor do, so write 60000 for 60 seconds",
            ),
            (
                "\"30s\"",
                "\"timeout\": \"30s\" is not a whole number of milliseconds; write 60000 for a minute",
            ),
            (
                "-5",
                "\"timeout\": -5 is not a whole number of milliseconds; write 60000 for a minute",
            ),
        ] {
            let error = parse(&format!(
                r#"{{"mcpServers": {{"s": {{"command": "x", "timeout": {timeout}}}}}}}"#
            ))
            .unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("/etc/tw/mcp.json: server \"s\": {expected}")
            );
        }
    }

    #[test]
    fn in_a_config_file_keys_other_clients_write_are_ignored_with_a_note_and_others_refused() {
        // Cursor's `auth` is read as a login (see `oauth`), so it is no note.
        let config = parse(
            r#"{"mcpServers": {
                "cursor": {"url": "https://x/mcp", "auth": {"CLIENT_ID": "id"}},
                "vscode": {"type": "stdio", "command": "x", "dev": {"watch": "src/**/*.ts"}},
                "off": {"command": "x", "disabled": true, "autoApprove": ["a"]}
            }}"#,
        )
        .unwrap();
        assert_eq!(config.names(), ["cursor", "vscode"]);
        let notes: Vec<String> = config.notes.iter().map(Note::to_string).collect();
        assert_eq!(
            notes,
            [
                "/etc/tw/mcp.json: server \"vscode\": \"dev\" is ignored: it is VS Code's development mode (watch and debug)",
            ]
        );
        // Misspellings of keys toolweave reads are named, with the key meant.
        for (key, meant) in [
            ("envfile", Some("envFile")),
            ("Command", Some("command")),
            ("header", Some("headers")),
            ("timout", Some("timeout")),
            ("arg", Some("args")),
            ("environment", None),
        ] {
            let error = parse(&format!(
                r#"{{"mcpServers": {{"s": {{"command": "x", "{key}": 1}}}}}}"#
            ))
            .unwrap_err()
            .to_string();
            let hint = meant.map_or(String::new(), |meant| {
                format!(" (did you mean \"{meant}\"?)")
            });
            assert_eq!(
                error,
                format!(
                    "/etc/tw/mcp.json: server \"s\": unknown key \"{key}\"{hint}; the keys a server entry may have are type, command, args, env, envFile, cwd, url, headers, oauth, auth, disabled, toolTimeouts, sandbox, timeout"
                )
            );
        }
        let error = parse(r#"{"mcpServers": {"s": ["x"]}}"#).unwrap_err();
        assert_eq!(
            error.to_string(),
            "/etc/tw/mcp.json: server \"s\": an entry must be an object such as {\"command\": \"...\", \"args\": [...]}, not an array"
        );
    }

    #[test]
    fn in_a_client_s_file_every_key_toolweave_does_not_use_is_a_note() {
        let entry = serde_json::json!({
            "command": "x",
            "timeout": 60,
            "envfile": ".env",
            "fooBar": true
        });
        let read = read_entry("s", &entry, Path::new("/c/mcp.json"), Owner::Client).unwrap();
        assert_eq!(read.tool_timeout, None);
        assert_eq!(
            read.notes(),
            [
                "\"timeout\" is not used: 60 is under a second; toolweave reads it in milliseconds, as Claude Code and Cursor do, so write 60000 for 60 seconds",
                "\"envfile\" is ignored: toolweave does not know it (did you mean \"envFile\"?)",
                "\"fooBar\" is ignored: toolweave does not know it",
            ]
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

    #[test]
    fn tool_timeouts_are_milliseconds_per_tool() {
        let config = parse(
            r#"{"mcpServers": {"reports": {"command": "x", "toolTimeouts": {"export": 600000, "ping": 1}}}}"#,
        )
        .unwrap();
        let timeouts = &config.servers[0].tool_timeouts;
        assert_eq!(timeouts.get("export"), Some(&Duration::from_secs(600)));
        assert_eq!(timeouts.get("ping"), Some(&Duration::from_millis(1)));
        assert!(
            parse(r#"{"mcpServers": {"a": {"command": "x"}}}"#)
                .unwrap()
                .servers[0]
                .tool_timeouts
                .is_empty()
        );
        for bad in ["\"10s\"", "0", "1.5", "-3"] {
            let error = parse(&format!(
                r#"{{"mcpServers": {{"reports": {{"command": "x", "toolTimeouts": {{"export": {bad}}}}}}}}}"#
            ))
            .unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "/etc/tw/mcp.json: server \"reports\": \"toolTimeouts\".\"export\" is {bad}; give the milliseconds one call to that tool may take, as a whole number such as 120000 for two minutes"
                )
            );
        }
    }
}
