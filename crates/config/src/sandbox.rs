//! A stdio server's box: what the entry's `"sandbox"` key grants it.
//!
//! ```json
//! "sandbox": {
//!   "read": ["~/notes"],
//!   "write": ["./data"],
//!   "network": "none" | "loopback" | ["api.example.com:443", "127.0.0.1:8080"],
//!   "env": ["GITHUB_TOKEN"]
//! }
//! ```
//!
//! `"sandbox": true` is a box with the defaults (nothing of the home folder, no network, no
//! variable of toolweave's environment); `"sandbox": false` runs the server unboxed even where the
//! settings file gives every server a box. Relative paths are taken from the config file's
//! folder, `~/` from the home folder; `${VAR}` references are resolved. Every error names the key
//! to change (`"sandbox"."read"[0]`).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The key of a server entry (and of the settings file) that boxes a stdio server.
pub const SANDBOX_KEY: &str = "sandbox";

/// What a boxed stdio server may reach beyond what it needs to start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sandbox {
    /// Paths it may read (files, or folders and everything beneath them).
    pub read: Vec<PathBuf>,
    /// Paths it may read, write, create and remove beneath.
    pub write: Vec<PathBuf>,
    /// What it may reach over the network.
    pub network: Network,
    /// Variables of toolweave's environment it is given (its entry's own `env` always is).
    pub env: Vec<String>,
    /// The key it is written under, for messages: `"sandbox"`, or `"boxes"."name"` of the
    /// settings file.
    pub key: String,
    /// Where that key is, for messages: `its entry in /etc/mcp.json`, or the settings file.
    pub place: String,
}

impl Sandbox {
    /// The key of one of its parts as written: `"sandbox"."read"`, `"boxes"."files"."network"`.
    pub fn key_of(&self, part: &str) -> String {
        format!("{}.\"{part}\"", self.key)
    }

    /// A box with the defaults, written under `key` (quoted, as messages show it).
    pub(crate) fn written(key: &str) -> Sandbox {
        Sandbox {
            key: key.to_owned(),
            ..Sandbox::default()
        }
    }

    /// Where the box is written: `"sandbox" in its entry in /etc/mcp.json`.
    pub fn written_at(&self) -> String {
        format!("{} in {}", self.key, self.place)
    }

    /// What the box lets its server do, in one line for `toolweave doctor` and `servers`.
    pub fn describe(&self) -> String {
        let paths = |paths: &[PathBuf]| {
            paths
                .iter()
                .map(|path| path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = vec![if self.read.is_empty() {
            "reads only what it needs to start".to_owned()
        } else {
            format!("reads what it needs to start and {}", paths(&self.read))
        }];
        parts.push(if self.write.is_empty() {
            "writes only its private home folder".to_owned()
        } else {
            format!("writes {} and its private home folder", paths(&self.write))
        });
        parts.push(match &self.network {
            Network::None => "no network".to_owned(),
            Network::Loopback => "its own loopback only".to_owned(),
            Network::Hosts(hosts) => format!(
                "reaches {} only",
                hosts
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
        parts.push(if self.env.is_empty() {
            "no variable of toolweave's environment".to_owned()
        } else {
            format!("of toolweave's environment, gets {}", self.env.join(", "))
        });
        parts.join("; ")
    }
}

/// The boxes a settings file gives the stdio servers whose entries have no `"sandbox"` key:
/// `"boxes": {"name": ...}` by server, else `"sandbox"` for every one. `None` is no box.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Boxes {
    /// The box of every stdio server without one of its own (`"sandbox"`).
    pub every: Option<Sandbox>,
    /// Boxes of particular servers by name (`"boxes"`); `None` runs that server unboxed.
    pub by_server: std::collections::BTreeMap<String, Option<Sandbox>>,
}

/// What a boxed server may reach over the network.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Network {
    /// Nothing: a network namespace of its own with no interface up.
    #[default]
    None,
    /// Its own loopback interface only (it may talk to itself and its own children), in a
    /// network namespace of its own: nothing of the machine's or the world's network.
    Loopback,
    /// These hosts, through an HTTP proxy toolweave runs for it (`HTTP_PROXY`, `HTTPS_PROXY`).
    Hosts(Vec<HostPort>),
}

impl Network {
    /// The value as written in the config: `"none"`, `"loopback"` or the list.
    pub fn written(&self) -> String {
        match self {
            Network::None => "\"none\"".to_owned(),
            Network::Loopback => "\"loopback\"".to_owned(),
            Network::Hosts(hosts) => {
                let hosts: Vec<String> = hosts.iter().map(|host| format!("\"{host}\"")).collect();
                format!("[{}]", hosts.join(", "))
            }
        }
    }
}

/// One host a boxed server may reach: a name or address, and a port.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HostPort {
    /// A host name or IP address, lower case, without brackets.
    pub host: String,
    /// The TCP port.
    pub port: u16,
}

impl std::fmt::Display for HostPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// The keys a `"sandbox"` object may have.
const KEYS: [&str; 4] = ["read", "write", "network", "env"];

/// Reads a `"sandbox"` value written under `key` (quoted, as messages show it: `"sandbox"`,
/// `"boxes"."files"`): `Ok(None)` for `false`. `base` is the folder relative paths start from,
/// `expand` resolves `${VAR}` references (naming the key in its error). Errors name the key.
pub(crate) fn read(
    value: &Value,
    key: &str,
    base: &Path,
    expand: &dyn Fn(&str, &str) -> Result<String, String>,
) -> Result<Option<Sandbox>, String> {
    let keys = match value {
        Value::Bool(false) => return Ok(None),
        Value::Bool(true) => return Ok(Some(Sandbox::written(key))),
        Value::Object(keys) => keys,
        other => {
            return Err(format!(
                "{key} is {}; write true for a box with the defaults, false for none, or an object with {}",
                crate::json_kind(other),
                quoted_keys()
            ));
        }
    };
    if let Some(unknown) = keys.keys().find(|name| !KEYS.contains(&name.as_str())) {
        return Err(format!(
            "{key} has an unknown key \"{unknown}\"; its keys are {}",
            quoted_keys()
        ));
    }
    let mut sandbox = Sandbox::written(key);
    for (part, paths) in [("read", &mut sandbox.read), ("write", &mut sandbox.write)] {
        let part_key = format!("{key}.\"{part}\"");
        for (index, text) in strings(keys.get(part), &part_key)?.iter().enumerate() {
            let name = format!("{part_key}[{index}]");
            let text = expand(text, &name)?;
            paths.push(resolve_path(&text, base).map_err(|why| format!("{name}: {why}"))?);
        }
    }
    if let Some(network) = keys.get("network") {
        sandbox.network = read_network(network, &format!("{key}.\"network\""))?;
    }
    let env_key = format!("{key}.\"env\"");
    for (index, name) in strings(keys.get("env"), &env_key)?.into_iter().enumerate() {
        let valid = !name.is_empty()
            && !name.contains('=')
            && !name.contains('\0')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            return Err(format!(
                "{env_key}[{index}] is {name:?}; give the name of a variable of toolweave's environment, such as \"GITHUB_TOKEN\""
            ));
        }
        sandbox.env.push(name);
    }
    Ok(Some(sandbox))
}

fn quoted_keys() -> String {
    KEYS.iter()
        .map(|key| format!("\"{key}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A list of strings under `key` (absent: empty).
fn strings(value: Option<&Value>, key: &str) -> Result<Vec<String>, String> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let not_strings = || {
        format!(
            "{key} must be a list of strings, such as [\"~/notes\"], not {}",
            crate::json_kind(value)
        )
    };
    let Value::Array(items) = value else {
        return Err(not_strings());
    };
    items
        .iter()
        .map(|item| item.as_str().map(str::to_owned).ok_or_else(not_strings))
        .collect()
}

/// A granted path: `~/` from the home folder, a relative one from the config file's folder.
fn resolve_path(text: &str, base: &Path) -> Result<PathBuf, String> {
    if text.trim().is_empty() {
        return Err("the path is empty".to_owned());
    }
    let path = if text == "~" || text.starts_with("~/") {
        let home = std::env::var_os("HOME")
            .ok_or("it starts with ~, but HOME is not set; give a full path")?;
        let rest = text.trim_start_matches('~').trim_start_matches('/');
        PathBuf::from(home).join(rest)
    } else if Path::new(text).is_relative() {
        base.join(text)
    } else {
        PathBuf::from(text)
    };
    if path == Path::new("/") {
        return Err("it grants the whole filesystem; name the folders the server needs".to_owned());
    }
    Ok(path)
}

/// `"network"` (written under `key`): `"none"`, `"loopback"` or a list of `"host:port"`.
fn read_network(value: &Value, key: &str) -> Result<Network, String> {
    let help =
        "write \"none\", \"loopback\" or a list of \"host:port\" such as [\"api.github.com:443\"]";
    match value {
        Value::String(word) if word == "none" => Ok(Network::None),
        Value::String(word) if word == "loopback" => Ok(Network::Loopback),
        Value::Array(items) => {
            let mut hosts = Vec::new();
            for (index, item) in items.iter().enumerate() {
                let host = item
                    .as_str()
                    .ok_or_else(|| format!("{key}[{index}] is {}; {help}", crate::json_kind(item)))
                    .and_then(|text| {
                        host_port(text)
                            .map_err(|why| format!("{key}[{index}] is {text:?}: {why}; {help}"))
                    })?;
                hosts.push(host);
            }
            hosts.sort();
            hosts.dedup();
            Ok(Network::Hosts(hosts))
        }
        other => Err(format!("{key} is {other}; {help}")),
    }
}

/// `host:port`, `[v6]:port`.
fn host_port(text: &str) -> Result<HostPort, String> {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (host, port) = rest
            .split_once("]:")
            .ok_or("an IPv6 address is written [address]:port")?;
        (host, port)
    } else {
        text.rsplit_once(':')
            .ok_or("it has no port (the port the server connects to, such as :443)")?
    };
    let port: u16 = port
        .parse()
        .ok()
        .filter(|port| *port > 0)
        .ok_or("the port is not a number from 1 to 65535")?;
    let host = host.to_ascii_lowercase();
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':');
    if host.is_empty() || !host.chars().all(plain) {
        return Err("the host is not a host name or an IP address".to_owned());
    }
    if host.contains(':') && !text.starts_with('[') {
        return Err("an IPv6 address is written [address]:port".to_owned());
    }
    Ok(HostPort { host, port })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sandbox(value: Value) -> Result<Option<Sandbox>, String> {
        read(&value, "\"sandbox\"", Path::new("/configs"), &|text, _| {
            Ok(text.to_owned())
        })
    }

    #[test]
    fn true_is_the_defaults_and_false_is_no_box() {
        let defaults = sandbox(json!(true)).unwrap().unwrap();
        assert_eq!(
            defaults,
            Sandbox {
                key: "\"sandbox\"".to_owned(),
                ..Sandbox::default()
            }
        );
        assert_eq!(sandbox(json!(false)).unwrap(), None);
        assert_eq!(Sandbox::default().network, Network::None);
    }

    #[test]
    fn paths_network_and_variables_are_read() {
        let read = sandbox(json!({
            "read": ["notes", "/srv/data"],
            "write": ["/tmp/out"],
            "network": ["API.example.com:443", "[::1]:8080", "api.example.com:443"],
            "env": ["GITHUB_TOKEN"],
        }))
        .unwrap()
        .unwrap();
        assert_eq!(
            read.read,
            vec![PathBuf::from("/configs/notes"), PathBuf::from("/srv/data")]
        );
        assert_eq!(read.write, vec![PathBuf::from("/tmp/out")]);
        let hosts: Vec<String> = match &read.network {
            Network::Hosts(hosts) => hosts.iter().map(ToString::to_string).collect(),
            other => panic!("{other:?}"),
        };
        assert_eq!(hosts, ["[::1]:8080", "api.example.com:443"]);
        assert_eq!(read.env, ["GITHUB_TOKEN"]);
        assert_eq!(
            sandbox(json!({"network": "loopback"}))
                .unwrap()
                .unwrap()
                .network,
            Network::Loopback
        );
    }

    #[test]
    fn each_mistake_names_the_key_to_change() {
        let cases = [
            (json!("yes"), "\"sandbox\" is a string; write true"),
            (
                json!({"reads": []}),
                "unknown key \"reads\"; its keys are \"read\", \"write\"",
            ),
            (
                json!({"read": "/srv"}),
                "\"sandbox\".\"read\" must be a list of strings",
            ),
            (
                json!({"write": [""]}),
                "\"sandbox\".\"write\"[0]: the path is empty",
            ),
            (
                json!({"read": ["/"]}),
                "\"sandbox\".\"read\"[0]: it grants the whole filesystem",
            ),
            (
                json!({"network": "all"}),
                "\"sandbox\".\"network\" is \"all\"; write \"none\"",
            ),
            (
                json!({"network": ["example.com"]}),
                "\"sandbox\".\"network\"[0] is \"example.com\": it has no port",
            ),
            (
                json!({"network": ["example.com:http"]}),
                "\"sandbox\".\"network\"[0] is \"example.com:http\": the port is not a number",
            ),
            (
                json!({"network": ["::1:80"]}),
                "an IPv6 address is written [address]:port",
            ),
            (
                json!({"env": ["A=B"]}),
                "\"sandbox\".\"env\"[0] is \"A=B\"; give the name",
            ),
        ];
        for (value, expected) in cases {
            let error = sandbox(value.clone()).unwrap_err();
            assert!(error.contains(expected), "{value}: {error}");
        }
    }
}
