//! Registering toolweave in an MCP client's config file: what `toolweave init` writes.
//!
//! [`plan`] computes the new file from the old one (toolweave's entry added or brought up to
//! date, and optionally the servers toolweave fronts marked `"disabled": true`); [`apply`] writes
//! it atomically, after copying the original to a backup that never replaces an older one. A plan
//! that changes nothing writes nothing, so running `init` twice leaves the file and its backups
//! as the first run left them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::discover::sources::project_keys;
use crate::discover::{Discovery, FRONTS_VARIABLE, Places, SourceKind, Status, is_self};
use crate::files::replace_file;
use crate::servers::{Owner, read_entry};
use crate::{Error, Result};

/// An MCP client whose config file `init` can write toolweave's entry into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Client {
    /// Claude Code: `~/.claude.json`, `mcpServers` (every project).
    ClaudeCode,
    /// Cursor: `~/.cursor/mcp.json` (every project).
    Cursor,
    /// VS Code: `.vscode/mcp.json` in the current directory, key `servers`.
    VsCode,
    /// Claude Desktop's `claude_desktop_config.json`.
    ClaudeDesktop,
    /// `.mcp.json` in the current directory (Claude Code's project scope, shared in the repository).
    Project,
}

impl Client {
    /// Every client, in the order `init` picks a default: the first whose file exists.
    pub const ALL: [Client; 5] = [
        Client::ClaudeCode,
        Client::Cursor,
        Client::VsCode,
        Client::ClaudeDesktop,
        Client::Project,
    ];

    /// The name `--client` takes.
    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::VsCode => "vscode",
            Client::ClaudeDesktop => "claude-desktop",
            Client::Project => "project",
        }
    }

    /// The discovery source toolweave's entry is written to.
    fn target(self) -> SourceKind {
        match self {
            Client::ClaudeCode => SourceKind::ClaudeCodeUser,
            Client::Cursor => SourceKind::CursorUser,
            Client::VsCode => SourceKind::VsCode,
            Client::ClaudeDesktop => SourceKind::ClaudeDesktop,
            Client::Project => SourceKind::Project,
        }
    }

    /// The sources in the written file whose servers the client runs itself: those
    /// `--disable-fronted` marks.
    fn sources(self) -> &'static [SourceKind] {
        match self {
            Client::ClaudeCode => &[SourceKind::ClaudeCodeLocal, SourceKind::ClaudeCodeUser],
            Client::Cursor => &[SourceKind::CursorUser],
            Client::VsCode => &[SourceKind::VsCode],
            Client::ClaudeDesktop => &[SourceKind::ClaudeDesktop],
            Client::Project => &[SourceKind::Project],
        }
    }

    /// The file `init` writes for this client; `None` when it is under an unknown home.
    pub fn path(self, places: &Places<'_>) -> Option<PathBuf> {
        self.target().path(places)
    }
}

/// What `init` is asked to do.
#[derive(Debug, Clone, Copy)]
pub struct Install<'a> {
    /// The client whose file to write.
    pub client: Client,
    /// Home and project directories.
    pub places: Places<'a>,
    /// The absolute path of the toolweave binary the client should start.
    pub program: &'a Path,
    /// A config file for `serve --config`; `None` lets toolweave discover its servers.
    pub config: Option<&'a Path>,
    /// With `config`: the names of its servers. Only entries of the client's file with these
    /// names are then fronted (toolweave serves that file's servers, not the discovered ones).
    pub config_servers: &'a [String],
    /// Mark the servers toolweave fronts in this file `"disabled": true`.
    pub disable_fronted: bool,
}

/// What happens to toolweave's own entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryChange {
    /// It is added.
    Added,
    /// An entry that starts toolweave is brought up to date.
    Updated,
    /// It is already as it should be.
    Unchanged,
}

/// The new content of one client file, computed but not written.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The client.
    pub client: Client,
    /// The file.
    pub path: PathBuf,
    /// The name of toolweave's entry under the server map.
    pub entry_name: String,
    /// What happens to it.
    pub entry: EntryChange,
    /// Servers newly marked `"disabled": true`.
    pub newly_disabled: Vec<String>,
    /// The servers of this file toolweave serves: with `disable_fronted`, recorded in its entry
    /// and marked disabled; without, the client runs them beside toolweave.
    pub fronted: Vec<String>,
    /// The file's text before, `None` when it does not exist.
    pub original: Option<String>,
    /// The file's text after.
    pub updated: String,
    changed: bool,
}

impl Plan {
    /// Whether writing it would change the file.
    pub fn changes_anything(&self) -> bool {
        self.changed
    }
}

/// Computes what `install` writes, from the file as it is and what discovery found.
pub fn plan(install: &Install<'_>, discovery: &Discovery) -> Result<Plan> {
    let client = install.client;
    let places = &install.places;
    let path = client.path(places).ok_or_else(|| Error::Write {
        path: PathBuf::from(client.name()),
        message: "the home directory is not known; set HOME".to_owned(),
    })?;
    let problem = |message: String| Error::Write {
        path: path.clone(),
        message,
    };
    let (original, before) = read_client_file(&path)?;
    let mut after = before.clone();
    let Value::Object(top) = &mut after else {
        return Err(problem("expected a JSON object".to_owned()));
    };
    let key = if client == Client::VsCode {
        "servers"
    } else {
        "mcpServers"
    };
    let servers = top.entry(key).or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err(problem(format!(
            "\"{key}\" must be an object mapping server names to entries"
        )));
    };

    let this_program = install
        .program
        .canonicalize()
        .unwrap_or(install.program.to_path_buf());
    let existing = servers.iter().find_map(|(name, value)| {
        read_entry(name, value, &path, Owner::Client)
            .ok()
            .filter(|entry| is_self(entry, Some(&this_program)))
            .map(|_| name.clone())
    });
    let entry_name = existing.clone().unwrap_or_else(|| "toolweave".to_owned());
    if existing.is_none() && servers.contains_key(&entry_name) {
        return Err(problem(format!(
            "it has a server \"{entry_name}\" that does not start toolweave; rename it first"
        )));
    }

    let fronted = fronted_servers(install, discovery);
    let entry = toolweave_entry(servers.get(&entry_name), install, &fronted);
    let change = match servers.get(&entry_name) {
        None => EntryChange::Added,
        Some(old) if *old == Value::Object(entry.clone()) => EntryChange::Unchanged,
        Some(_) => EntryChange::Updated,
    };
    servers.insert(entry_name.clone(), Value::Object(entry));

    let to_disable: &[String] = if install.disable_fronted {
        &fronted
    } else {
        &[]
    };
    let newly_disabled = disable_in(top, client, places.cwd, key, to_disable);

    let changed = after != before;
    let updated = match &original {
        Some(text) if changed => render(&after, text)?,
        Some(text) => text.clone(),
        None => render(&after, "{\n  \"\": 0\n}\n")?,
    };
    Ok(Plan {
        client,
        path,
        entry_name,
        entry: change,
        newly_disabled,
        fronted,
        original,
        updated,
        changed,
    })
}

/// The file's text, when there is one, and its JSON (an empty object when there is none); a
/// file with comments is refused, as rewriting it would lose them.
fn read_client_file(path: &Path) -> Result<(Option<String>, Value)> {
    let problem = |message: String| Error::Write {
        path: path.to_path_buf(),
        message,
    };
    let original = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(Error::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let before: Value = match &original {
        None => Value::Object(Map::new()),
        Some(text) => match crate::jsonc::parse(text) {
            Ok((value, crate::jsonc::Dialect::Json)) => value,
            Ok((_, crate::jsonc::Dialect::Jsonc)) => {
                return Err(problem(
                    "it has comments or trailing commas, which toolweave would lose in rewriting \
                     it; add toolweave's entry by hand (see `toolweave init --help`), or pick \
                     another --client"
                        .to_owned(),
                ));
            }
            Err(error) => {
                return Err(problem(format!("{error}; fix it or pick another --client")));
            }
        },
    };
    Ok((original, before))
}

/// The servers of the client's files that toolweave serves (itself, or through a higher entry
/// of the same name): the ones the client would otherwise run beside it, sorted.
fn fronted_servers(install: &Install<'_>, discovery: &Discovery) -> Vec<String> {
    let mut fronted: Vec<String> = Vec::new();
    for entry in &discovery.entries {
        let served = matches!(
            entry.status,
            Status::Used { .. } | Status::Overridden { .. }
        );
        let served = match install.config {
            Some(_) => install.config_servers.contains(&entry.name),
            None => served,
        };
        if served
            && install.client.sources().contains(&entry.source)
            && !fronted.contains(&entry.name)
        {
            fronted.push(entry.name.clone());
        }
    }
    fronted.sort();
    fronted
}

/// toolweave's entry as it is to be written: the one there (`existing`) with the command, its
/// arguments and the servers it fronts set, its other keys kept.
fn toolweave_entry(
    existing: Option<&Value>,
    install: &Install<'_>,
    fronted: &[String],
) -> Map<String, Value> {
    let mut entry = match existing {
        Some(Value::Object(entry)) => entry.clone(),
        _ => Map::new(),
    };
    if install.client == Client::VsCode {
        entry.insert("type".to_owned(), Value::from("stdio"));
    }
    entry.insert(
        "command".to_owned(),
        Value::from(install.program.display().to_string()),
    );
    let mut args = vec![Value::from("serve")];
    if let Some(config) = install.config {
        args.push(Value::from("--config"));
        args.push(Value::from(config.display().to_string()));
    }
    entry.insert("args".to_owned(), Value::Array(args));
    if install.disable_fronted && !fronted.is_empty() {
        let env = entry
            .entry("env")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(env) = env {
            env.insert(FRONTS_VARIABLE.to_owned(), Value::from(fronted.join(",")));
        }
    }
    entry
}

/// Marks the servers `to_disable` disabled in every server map of the client's file (`top`,
/// whose own map is under `key`); the names it newly disabled.
fn disable_in(
    top: &mut Map<String, Value>,
    client: Client,
    cwd: &Path,
    key: &str,
    to_disable: &[String],
) -> Vec<String> {
    let mut newly_disabled = Vec::new();
    for source in client.sources() {
        let map = match source {
            SourceKind::ClaudeCodeLocal => top
                .get_mut("projects")
                .and_then(Value::as_object_mut)
                .and_then(|projects| {
                    let key = project_keys(cwd)
                        .into_iter()
                        .find(|key| projects.contains_key(key))?;
                    projects.get_mut(&key)
                })
                .and_then(|project| project.get_mut("mcpServers")),
            _ => top.get_mut(key),
        };
        let Some(Value::Object(map)) = map else {
            continue;
        };
        for name in to_disable {
            if let Some(Value::Object(server)) = map.get_mut(name)
                && server.get("disabled") != Some(&Value::Bool(true))
            {
                server.insert("disabled".to_owned(), Value::Bool(true));
                newly_disabled.push(name.clone());
            }
        }
    }
    newly_disabled
}

/// JSON text in the layout of `like`: its indentation, one line when it was one line, and a
/// final newline when it had one.
fn render(value: &Value, like: &str) -> Result<String> {
    let trimmed = like.trim_end();
    let mut text = if !trimmed.contains('\n') {
        serde_json::to_string(value)
    } else {
        let indent: String = trimmed
            .lines()
            .skip(1)
            .map(|line| {
                line.chars()
                    .take_while(|character| *character == ' ' || *character == '\t')
                    .collect::<String>()
            })
            .find(|indent| !indent.is_empty())
            .unwrap_or_else(|| "  ".to_owned());
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
        let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
        value
            .serialize(&mut serializer)
            .map(|()| String::from_utf8_lossy(&out).into_owned())
    }
    .map_err(|error| Error::Write {
        path: PathBuf::new(),
        message: error.to_string(),
    })?;
    if like.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// Writes a plan: the original is first copied to `<file>.toolweave-backup-<UTC time>` (with
/// `-2`, `-3`... when that exists; an older backup is never replaced), then the new text goes to
/// a temporary file beside it that is renamed over the file. Returns the backup, if one was made.
/// A plan that changes nothing writes nothing.
pub fn apply(plan: &Plan, now: SystemTime) -> Result<Option<PathBuf>> {
    if !plan.changed {
        return Ok(None);
    }
    let failed = |path: &Path, error: std::io::Error| Error::Write {
        path: path.to_path_buf(),
        message: error.to_string(),
    };
    // A file that is a symbolic link (dotfiles kept elsewhere) is written where it points.
    let path = plan.path.canonicalize().unwrap_or(plan.path.clone());
    let directory = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(directory).map_err(|error| failed(directory, error))?;
    let mut backup = None;
    let permissions = std::fs::metadata(&path).ok().map(|meta| meta.permissions());
    if let Some(original) = &plan.original {
        let stamp = utc_stamp(now);
        let mut attempt = 1;
        loop {
            let mut name = path.as_os_str().to_owned();
            name.push(format!(".toolweave-backup-{stamp}"));
            if attempt > 1 {
                name.push(format!("-{attempt}"));
            }
            let candidate = PathBuf::from(name);
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&candidate)
            {
                Ok(mut file) => {
                    file.write_all(original.as_bytes())
                        .and_then(|()| file.sync_all())
                        .map_err(|error| failed(&candidate, error))?;
                    if let Some(permissions) = &permissions {
                        std::fs::set_permissions(&candidate, permissions.clone())
                            .map_err(|error| failed(&candidate, error))?;
                    }
                    backup = Some(candidate);
                    break;
                }
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                    attempt += 1;
                }
                Err(error) => return Err(failed(&candidate, error)),
            }
        }
    }
    replace_file(&path, plan.updated.as_bytes(), permissions, 0o666)
        .map_err(|error| failed(&path, error))?;
    Ok(backup)
}

/// `YYYYMMDD-HHMMSS` in UTC.
fn utc_stamp(now: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(now)
        .format("%Y%m%d-%H%M%S")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_utc_dates() {
        let at = |seconds| SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(seconds);
        assert_eq!(utc_stamp(at(0)), "19700101-000000");
        assert_eq!(utc_stamp(at(951_782_400)), "20000229-000000");
        assert_eq!(utc_stamp(at(1_767_225_599)), "20251231-235959");
    }

    fn install_into(home: &Path, program: &Path) -> Plan {
        let places = Places {
            home: Some(home),
            cwd: home,
            this_program: Some(program),
            trust_file: None,
        };
        let discovery = crate::discover(&places, &|_| None);
        plan(
            &Install {
                client: Client::Cursor,
                places,
                program,
                config: None,
                config_servers: &[],
                disable_fronted: false,
            },
            &discovery,
        )
        .unwrap()
    }

    #[test]
    fn backups_never_replace_older_ones_and_links_are_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        let program = home.join("toolweave");
        std::fs::write(&program, "").unwrap();
        let real = home.join("dotfiles/cursor-mcp.json");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "{\"mcpServers\": {}}\n").unwrap();
        std::fs::create_dir_all(home.join(".cursor")).unwrap();
        std::os::unix::fs::symlink(&real, home.join(".cursor/mcp.json")).unwrap();
        let now = SystemTime::UNIX_EPOCH;
        let older = home.join("dotfiles/cursor-mcp.json.toolweave-backup-19700101-000000");
        std::fs::write(&older, "older").unwrap();

        let first = install_into(&home, &program);
        assert_eq!(first.entry, EntryChange::Added);
        let backup = apply(&first, now).unwrap().unwrap();
        assert_eq!(
            backup,
            home.join("dotfiles/cursor-mcp.json.toolweave-backup-19700101-000000-2")
        );
        assert_eq!(std::fs::read_to_string(&older).unwrap(), "older");
        assert_eq!(
            std::fs::read_to_string(&backup).unwrap(),
            "{\"mcpServers\": {}}\n"
        );
        assert!(
            std::fs::symlink_metadata(home.join(".cursor/mcp.json"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(
            std::fs::read_to_string(&real)
                .unwrap()
                .contains("\"toolweave\"")
        );

        let second = install_into(&home, &program);
        assert_eq!(second.entry, EntryChange::Unchanged);
        assert!(!second.changes_anything());
        assert_eq!(apply(&second, now).unwrap(), None);
    }

    #[test]
    fn an_entry_named_toolweave_that_is_something_else_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        let program = home.join("bin/tw");
        std::fs::create_dir_all(home.join("bin")).unwrap();
        std::fs::write(&program, "").unwrap();
        std::fs::create_dir_all(home.join(".cursor")).unwrap();
        std::fs::write(
            home.join(".cursor/mcp.json"),
            r#"{"mcpServers": {"toolweave": {"command": "weaver", "args": ["--loom"]}}}"#,
        )
        .unwrap();
        let places = Places {
            home: Some(&home),
            cwd: &home,
            this_program: Some(&program),
            trust_file: None,
        };
        let error = plan(
            &Install {
                client: Client::Cursor,
                places,
                program: &program,
                config: None,
                config_servers: &[],
                disable_fronted: false,
            },
            &crate::discover(&places, &|_| None),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("rename it first"), "{error}");
    }

    #[test]
    fn a_file_with_comments_is_read_but_not_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        let program = home.join("bin/tw");
        std::fs::create_dir_all(home.join("bin")).unwrap();
        std::fs::write(&program, "").unwrap();
        std::fs::create_dir_all(home.join(".cursor")).unwrap();
        let text = "{\n  // mine\n  \"mcpServers\": {\"memory\": {\"command\": \"mem\"},},\n}\n";
        std::fs::write(home.join(".cursor/mcp.json"), text).unwrap();
        let places = Places {
            home: Some(&home),
            cwd: &home,
            this_program: Some(&program),
            trust_file: None,
        };
        let discovery = crate::discover(&places, &|_| None);
        assert!(
            discovery
                .config
                .servers
                .iter()
                .any(|server| server.name == "memory"),
            "the commented file is read: {discovery:?}"
        );
        let error = plan(
            &Install {
                client: Client::Cursor,
                places,
                program: &program,
                config: None,
                config_servers: &[],
                disable_fronted: false,
            },
            &discovery,
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("comments or trailing commas"), "{error}");
        assert_eq!(
            std::fs::read_to_string(home.join(".cursor/mcp.json")).unwrap(),
            text
        );
    }

    #[test]
    fn rendering_keeps_the_layout() {
        let value = serde_json::json!({"a": {"b": 1}});
        assert_eq!(
            render(&value, "{\n\t\"x\": 1\n}\n").unwrap(),
            "{\n\t\"a\": {\n\t\t\"b\": 1\n\t}\n}\n"
        );
        assert_eq!(render(&value, "{\"x\":1}").unwrap(), "{\"a\":{\"b\":1}}");
        assert_eq!(
            render(&value, "{\n    \"x\": 1\n}").unwrap(),
            "{\n    \"a\": {\n        \"b\": 1\n    }\n}"
        );
    }
}
