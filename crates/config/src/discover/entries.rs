//! How one entry of a client's file is read: the file's top object, whether the entry is
//! toolweave itself, what it runs, the editors' variables, and whether it is used.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Map, Value};

use super::{FRONTS_VARIABLE, Places, SourceKind, Status};
use crate::ServerConfig;
use crate::servers::{Owner, RawEntry, read_entry, resolve_entry};

/// A file's top-level object; `Ok(None)` when there is no file, `Err` says why it is unreadable.
pub(super) type FileTop = Result<Option<Map<String, Value>>, String>;

/// The file's top-level object; `Ok(None)` when there is no file.
pub(super) fn read_top(path: &Path) -> FileTop {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(format!("cannot read it: {error}")),
    };
    match crate::jsonc::parse(&text) {
        Ok((Value::Object(top), _)) => Ok(Some(top)),
        Ok(_) => Err("expected a JSON object".to_owned()),
        Err(error) => Err(error),
    }
}

/// The names toolweave's own entries in this file say it fronts (every server map of the file).
pub(super) fn fronted_in(
    top: &Map<String, Value>,
    cwd: &Path,
    this_program: Option<&Path>,
) -> BTreeSet<String> {
    let mut fronted = BTreeSet::new();
    for kind in SourceKind::ALL {
        let Some(Value::Object(servers)) = kind.servers_in(top, cwd) else {
            continue;
        };
        for (name, value) in servers {
            let Ok(entry) = read_entry(name, value, Path::new(""), Owner::Client) else {
                continue;
            };
            if !is_self(&entry, this_program) {
                continue;
            }
            if let Some(list) = entry.env().and_then(|env| env.get(FRONTS_VARIABLE)) {
                fronted.extend(
                    list.split(',')
                        .map(str::trim)
                        .filter(|name| !name.is_empty())
                        .map(str::to_owned),
                );
            }
        }
    }
    fronted
}

/// Programs that fetch a package and start its command (`npx -y toolweave serve`, `uvx
/// toolweave serve`, `pipx run toolweave serve`), as MCP client configs name them.
pub(super) const PACKAGE_RUNNERS: &[&str] = &[
    "npx", "bunx", "pnpx", "npm", "pnpm", "yarn", "bun", "uvx", "uv", "pipx",
];

/// Whether an entry starts toolweave: its program is this binary, or it is named `toolweave`
/// and has a `serve` argument, or it is a package runner starting the `toolweave` package with a
/// `serve` argument after it.
pub(crate) fn is_self(entry: &RawEntry, this_program: Option<&Path>) -> bool {
    let Some(command) = entry.command() else {
        return false;
    };
    let command = Path::new(command);
    if let Some(this_program) = this_program
        && command.is_absolute()
        && command
            .canonicalize()
            .is_ok_and(|command| command == this_program)
    {
        return true;
    }
    let serves = |args: &[String]| args.iter().any(|arg| arg == "serve");
    let args = entry.args();
    if command
        .file_name()
        .is_some_and(|name| name == "toolweave" || name == "toolweave.exe")
    {
        return serves(args);
    }
    // `file_stem`: on Windows the runners are `npx.cmd` and the like.
    let runner = command.file_stem().and_then(|name| name.to_str());
    runner.is_some_and(|runner| PACKAGE_RUNNERS.contains(&runner))
        && args
            .iter()
            .position(|arg| is_toolweave_package(arg))
            .is_some_and(|at| serves(&args[at + 1..]))
}

/// Whether a package runner's argument names the `toolweave` package, with or without a version
/// (`toolweave@0.1.0` for npm and uv, `toolweave==0.1.0` for uv and pipx).
pub(super) fn is_toolweave_package(arg: &str) -> bool {
    arg.strip_prefix("toolweave")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('@') || rest.starts_with("=="))
}

/// What the files say about one entry besides the entry itself.
#[derive(Debug, Clone)]
pub(super) struct ClientSays {
    /// toolweave's own entry in the file says it fronts this server.
    pub(super) fronted: bool,
    /// Claude Code was told not to run it in this project (`disabledMcpjsonServers`).
    pub(super) switched_off: bool,
    /// Whether it may start as far as trust goes.
    pub(super) trust: Trust,
}

/// Whether an entry waits to be trusted.
#[derive(Debug, Clone)]
pub(super) enum Trust {
    /// It is not in a project's own file, or it is trusted as it is.
    NotNeeded,
    /// It is in a project's own file and not trusted as it is now.
    Missing {
        /// An earlier text of it was trusted.
        changed: bool,
        /// Its text now.
        fingerprint: String,
        /// What it runs, for [`Status::NotTrusted`].
        runs: String,
    },
}

/// The server to use for one entry, with what was ignored in it (one line per key), or why it is
/// not used.
pub(super) fn classify(
    name: &str,
    value: &Value,
    client: ClientSays,
    path: &Path,
    this_program: Option<&Path>,
    winners: &BTreeMap<String, SourceKind>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(ServerConfig, Vec<String>), Status> {
    let entry = read_entry(name, value, path, Owner::Client).map_err(|error| Status::Invalid {
        reason: error.to_string(),
    })?;
    if is_self(&entry, this_program) {
        return Err(Status::SelfReference);
    }
    if entry.disabled() && !client.fronted {
        return Err(Status::Disabled);
    }
    if client.switched_off && !client.fronted {
        return Err(Status::SwitchedOff);
    }
    if let Some(by) = winners.get(name) {
        return Err(Status::Overridden { by: *by });
    }
    if let Some(reason) = unsupported(value) {
        return Err(Status::Unsupported { reason });
    }
    if let Trust::Missing {
        changed,
        fingerprint,
        runs,
    } = client.trust
    {
        return Err(Status::NotTrusted {
            changed,
            fingerprint,
            runs,
        });
    }
    let notes = entry.notes().to_vec();
    match resolve_entry(name, entry, path, lookup) {
        Ok(server) => Ok((server, notes)),
        // What was ignored may be why the entry does not work (`comand` for `command`).
        Err(error) if !notes.is_empty() => Err(Status::Invalid {
            reason: format!("{error}; {}", notes.join("; ")),
        }),
        Err(error) => Err(Status::Invalid {
            reason: error.to_string(),
        }),
    }
}

/// What an entry starts, for a person deciding whether to trust it: the command and its
/// arguments (or the transport and URL), and the names of its variables and headers; values of
/// variables and headers are left out, as they may be secrets.
pub(super) fn runs(value: &Value) -> String {
    let text = |key: &str| value.get(key).and_then(Value::as_str);
    let quoted = |word: &str| {
        if !word.is_empty()
            && word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+%${}".contains(c))
        {
            word.to_owned()
        } else {
            format!("{word:?}")
        }
    };
    let keys = |key: &str| -> Option<String> {
        let names: Vec<&str> = value
            .get(key)?
            .as_object()?
            .keys()
            .map(String::as_str)
            .collect();
        (!names.is_empty()).then(|| names.join(", "))
    };
    let mut parts = Vec::new();
    if let Some(command) = text("command") {
        let mut line = quoted(command);
        for arg in value
            .get("args")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            line.push(' ');
            match arg.as_str() {
                Some(arg) => line.push_str(&quoted(arg)),
                None => line.push_str(&arg.to_string()),
            }
        }
        parts.push(line);
        if let Some(names) = keys("env") {
            parts.push(format!("env {names}"));
        }
        if let Some(file) = text("envFile") {
            parts.push(format!("envFile {}", quoted(file)));
        }
        if let Some(cwd) = text("cwd") {
            parts.push(format!("cwd {}", quoted(cwd)));
        }
    } else if let Some(url) = text("url") {
        parts.push(format!("{} {url}", text("type").unwrap_or("http")));
        if let Some(names) = keys("headers") {
            parts.push(format!("headers {names}"));
        }
    } else {
        parts.push("(no command or url)".to_owned());
    }
    parts.join("; ")
}

/// An editor's entry (VS Code, Cursor) with the variables the editor resolves itself replaced:
/// `${workspaceFolder}` and `${workspaceFolderBasename}` (the project directory, as the editor
/// would have it open), `${userHome}`, `${pathSeparator}` and `${/}`. `${env:NAME}` becomes
/// `${NAME}`, which toolweave resolves as it does everywhere, keeping the value out of every
/// message. Anything else (`${input:...}`) is left for [`unsupported`] to report.
pub(super) fn editor_variables(value: &Value, places: &Places<'_>) -> Value {
    match value {
        Value::String(text) if text.contains("${") => {
            let mut text = text.clone();
            let folder = places.cwd.display().to_string();
            let basename = places
                .cwd
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_else(|| folder.clone());
            let separator = std::path::MAIN_SEPARATOR_STR;
            let mut known = vec![
                ("${workspaceFolder}", folder),
                ("${workspaceFolderBasename}", basename),
                ("${pathSeparator}", separator.to_owned()),
                ("${/}", separator.to_owned()),
            ];
            if let Some(home) = places.home {
                known.push(("${userHome}", home.display().to_string()));
            }
            for (variable, replacement) in known {
                text = text.replace(variable, &replacement);
            }
            Value::String(text.replace("${env:", "${"))
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| editor_variables(item, places))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| (key.clone(), editor_variables(item, places)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// VS Code's `${input:...}` (a prompt only VS Code can show) and, outside the editors' own
/// files, their `${env:...}` form.
pub(super) fn unsupported(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => {
            if let Some(start) = text.find("${input:") {
                let reference = &text[start
                    ..text[start..]
                        .find('}')
                        .map_or(text.len(), |end| start + end + 1)];
                return Some(format!(
                    "it uses {reference}, a VS Code input that only VS Code can prompt for; put the value in an environment variable and write ${{NAME}} instead"
                ));
            }
            if let Some(start) = text.find("${env:") {
                let reference = &text[start
                    ..text[start..]
                        .find('}')
                        .map_or(text.len(), |end| start + end + 1)];
                return Some(format!(
                    "it uses {reference}, VS Code's form of a variable; toolweave reads ${{NAME}}"
                ));
            }
            None
        }
        Value::Array(items) => items.iter().find_map(unsupported),
        Value::Object(map) => map.values().find_map(unsupported),
        _ => None,
    }
}
