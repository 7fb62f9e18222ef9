//! Which servers of a project's own files may start.
//!
//! A project's `.mcp.json`, `.cursor/mcp.json` and `.vscode/mcp.json` come with the project: a
//! repository someone cloned can name any command there, and discovery would start it as soon
//! as toolweave runs in that folder. The clients that read those files ask first (Claude Code
//! for `.mcp.json` servers, VS Code and Cursor for their workspace servers), and so does
//! toolweave: such an entry starts only once it is trusted.
//!
//! - `toolweave trust` records, in a file of the user's own ([`default_trust_path`]), the
//!   [`fingerprint`] of each entry the user accepted, per project folder. An entry whose text
//!   changes is no longer trusted until it is accepted again.
//! - For `.mcp.json`, Claude Code's own approvals count too, where Claude Code itself counts
//!   them in a folder it was told to trust: `enabledMcpjsonServers` and
//!   `enableAllProjectMcpServers` in `~/.claude.json` (`projects["<folder>"]`),
//!   `~/.claude/settings.json`, and the project's `.claude/settings.local.json` (where Claude Code
//!   writes them) once the folder passed Claude Code's trust dialog and git does not track that
//!   file. The project's `.claude/settings.json`, which a repository ships, is never read as a
//!   "yes"; a "no" (`disabledMcpjsonServers`) is honoured from all of them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::discover::sources::project_keys;
use crate::{Discovery, Error, Result, Status};

/// Where toolweave keeps the entries the user trusts: `$XDG_CONFIG_HOME/toolweave/trusted.json`,
/// or `~/.config/toolweave/trusted.json`.
pub fn default_trust_path(xdg_config_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    let base = match (xdg_config_home, home) {
        (Some(xdg), _) if xdg.is_absolute() => xdg.to_path_buf(),
        (_, Some(home)) => home.join(".config"),
        _ => return None,
    };
    Some(base.join("toolweave").join("trusted.json"))
}

/// What identifies an entry's text: `sha256:` and the hex digest of its JSON with every
/// object's keys sorted, so reformatting the file or reordering keys changes nothing, and any
/// change to a command, argument, variable, URL or header does.
pub fn fingerprint(entry: &Value) -> String {
    fn canonical(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (index, key) in keys.into_iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                    canonical(&map[key], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    canonical(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut text = String::new();
    canonical(entry, &mut text);
    let digest = Sha256::digest(text.as_bytes());
    let mut hex = String::with_capacity(7 + 64);
    hex.push_str("sha256:");
    for byte in digest {
        hex.push_str(&format!("{byte:02x}"));
    }
    hex
}

/// The trust file: per project folder, per file (as the folder names it: `.mcp.json`,
/// `.vscode/mcp.json`...), per server name, the fingerprint of the entry that was accepted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trusted {
    /// Folder → file → server → fingerprint.
    #[serde(default)]
    pub projects: BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>,
}

impl Trusted {
    /// Reads the trust file; a missing file trusts nothing.
    pub fn load(path: &Path) -> Result<Self> {
        crate::files::read_kept(
            path,
            "this file is written by `toolweave trust`: fix it, or remove it and trust the projects again",
        )
    }

    /// The fingerprint accepted for `server` of `file` in the project folder `cwd`.
    pub fn accepted(&self, cwd: &Path, file: &str, server: &str) -> Option<&str> {
        project_keys(cwd)
            .iter()
            .find_map(|key| self.projects.get(key))?
            .get(file)?
            .get(server)
            .map(String::as_str)
    }

    /// Replaces what is trusted in the folder `cwd` with `servers` (file → server →
    /// fingerprint); an empty map forgets the folder.
    pub fn set_folder(&mut self, cwd: &Path, servers: BTreeMap<String, BTreeMap<String, String>>) {
        for key in project_keys(cwd) {
            self.projects.remove(&key);
        }
        if !servers.is_empty() {
            self.projects.insert(folder_key(cwd), servers);
        }
    }

    /// Writes the trust file (readable by its owner only): a temporary file beside it, renamed
    /// over it, so a failed write leaves the old one whole.
    pub fn save(&self, path: &Path) -> Result<()> {
        let failed = |path: &Path, error: std::io::Error| Error::Write {
            path: path.to_path_buf(),
            message: error.to_string(),
        };
        let directory = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(directory).map_err(|error| failed(directory, error))?;
        let mut text = serde_json::to_string_pretty(self).map_err(|error| Error::Write {
            path: path.to_path_buf(),
            message: error.to_string(),
        })?;
        text.push('\n');
        crate::files::replace_file(path, text.as_bytes(), None, 0o600)
            .map_err(|error| failed(path, error))?;
        Ok(())
    }
}

impl Trusted {
    /// Trusts every entry of the project folder `cwd` that `discovery` found waiting
    /// ([`Discovery::untrusted`]), as its text is now. What was trusted there before is kept for
    /// the entries still in the project's files and forgotten for the others.
    pub fn accept_waiting(&mut self, cwd: &Path, discovery: &Discovery) {
        let present: BTreeSet<(&str, &str)> = discovery
            .entries
            .iter()
            .filter_map(|entry| Some((entry.source.project_file()?, entry.name.as_str())))
            .collect();
        let mut servers: BTreeMap<String, BTreeMap<String, String>> = project_keys(cwd)
            .iter()
            .find_map(|key| self.projects.get(key))
            .cloned()
            .unwrap_or_default();
        for (file, names) in &mut servers {
            names.retain(|name, _| present.contains(&(file.as_str(), name.as_str())));
        }
        for entry in discovery.untrusted() {
            if let (Some(file), Status::NotTrusted { fingerprint, .. }) =
                (entry.source.project_file(), &entry.status)
            {
                servers
                    .entry(file.to_owned())
                    .or_default()
                    .insert(entry.name.clone(), fingerprint.clone());
            }
        }
        servers.retain(|_, names| !names.is_empty());
        self.set_folder(cwd, servers);
    }
}

/// The key a folder is recorded under: its path with symbolic links resolved, when it can be.
pub(crate) fn folder_key(cwd: &Path) -> String {
    cwd.canonicalize()
        .unwrap_or_else(|_| cwd.to_path_buf())
        .display()
        .to_string()
}

/// What Claude Code's own files say about the project's `.mcp.json` servers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ClaudeApprovals {
    /// Every `.mcp.json` server is approved (`enableAllProjectMcpServers`).
    pub(crate) all: bool,
    /// These are approved (`enabledMcpjsonServers`).
    pub(crate) enabled: BTreeSet<String>,
    /// These were refused (`disabledMcpjsonServers`): a refusal wins over an approval.
    pub(crate) disabled: BTreeSet<String>,
}

impl ClaudeApprovals {
    /// Reads `user` (settings objects the repository cannot ship: `~/.claude.json`'s entry for
    /// this project, `~/.claude/settings.json`) for approvals and refusals, and `project`
    /// (`.claude/settings.json`, `.claude/settings.local.json`) for refusals only.
    pub(crate) fn from_settings(
        user: &[&Map<String, Value>],
        project: &[&Map<String, Value>],
    ) -> Self {
        let mut approvals = Self::default();
        for settings in user {
            approvals.all |= settings.get("enableAllProjectMcpServers") == Some(&Value::Bool(true));
            approvals
                .enabled
                .extend(names(settings.get("enabledMcpjsonServers")));
        }
        for settings in user.iter().chain(project) {
            approvals
                .disabled
                .extend(names(settings.get("disabledMcpjsonServers")));
        }
        approvals
    }

    /// Whether Claude Code was told it may run the `.mcp.json` server `name`.
    pub(crate) fn approves(&self, name: &str) -> bool {
        !self.disabled.contains(name) && (self.all || self.enabled.contains(name))
    }
}

fn names(list: Option<&Value>) -> impl Iterator<Item = String> + '_ {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_ignore_layout_and_key_order_but_not_content() {
        let a: Value = serde_json::from_str(
            r#"{"command": "npx", "args": ["-y", "x"], "env": {"A": "1", "B": "2"}}"#,
        )
        .unwrap();
        let b: Value = serde_json::from_str(
            r#"{
                "env": {"B": "2", "A": "1"},
                "args": ["-y", "x"],
                "command": "npx"
            }"#,
        )
        .unwrap();
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert!(fingerprint(&a).starts_with("sha256:"));
        assert_eq!(fingerprint(&a).len(), 7 + 64);
        for changed in [
            r#"{"command": "npx", "args": ["-y", "x"], "env": {"A": "1", "B": "3"}}"#,
            r#"{"command": "npx", "args": ["x", "-y"], "env": {"A": "1", "B": "2"}}"#,
            r#"{"command": "npx", "args": ["-y", "x"], "env": {"A": "1", "B": "2", "LD_PRELOAD": "./x.so"}}"#,
            r#"{"command": "sh", "args": ["-y", "x"], "env": {"A": "1", "B": "2"}}"#,
        ] {
            let changed: Value = serde_json::from_str(changed).unwrap();
            assert_ne!(fingerprint(&a), fingerprint(&changed), "{changed}");
        }
    }

    #[test]
    fn the_trust_file_round_trips_and_forgets_folders() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("config/toolweave/trusted.json");
        let project = root.path().join("src/app");
        std::fs::create_dir_all(&project).unwrap();
        assert_eq!(Trusted::load(&path).unwrap(), Trusted::default());

        let mut trusted = Trusted::default();
        let mut servers = BTreeMap::new();
        servers.insert(
            ".mcp.json".to_owned(),
            BTreeMap::from([("docs".to_owned(), "sha256:ab".to_owned())]),
        );
        trusted.set_folder(&project, servers);
        trusted.save(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let read = Trusted::load(&path).unwrap();
        assert_eq!(read, trusted);
        assert_eq!(
            read.accepted(&project, ".mcp.json", "docs"),
            Some("sha256:ab")
        );
        assert_eq!(read.accepted(&project, ".vscode/mcp.json", "docs"), None);
        assert_eq!(read.accepted(root.path(), ".mcp.json", "docs"), None);

        let mut forgotten = read.clone();
        forgotten.set_folder(&project, BTreeMap::new());
        assert!(forgotten.projects.is_empty());

        std::fs::write(&path, r#"{"projects": {}, "extra": 1}"#).unwrap();
        let error = Trusted::load(&path).unwrap_err().to_string();
        assert!(error.contains("trusted.json"), "{error}");
        assert!(error.contains("toolweave trust"), "{error}");
    }

    #[test]
    fn claude_code_approvals_count_only_from_the_user_s_files() {
        let user: Map<String, Value> = serde_json::from_str(
            r#"{"enabledMcpjsonServers": ["docs", "both"], "disabledMcpjsonServers": ["off"]}"#,
        )
        .unwrap();
        let shipped: Map<String, Value> = serde_json::from_str(
            r#"{"enableAllProjectMcpServers": true, "enabledMcpjsonServers": ["evil"], "disabledMcpjsonServers": ["both"]}"#,
        )
        .unwrap();
        let approvals = ClaudeApprovals::from_settings(&[&user], &[&shipped]);
        assert!(approvals.approves("docs"));
        assert!(
            !approvals.approves("evil"),
            "a repository cannot approve its own servers"
        );
        assert!(!approvals.approves("both"), "a refusal from anywhere wins");
        assert!(!approvals.approves("off"));

        let all: Map<String, Value> =
            serde_json::from_str(r#"{"enableAllProjectMcpServers": true}"#).unwrap();
        let approvals = ClaudeApprovals::from_settings(&[&user, &all], &[]);
        assert!(approvals.approves("anything"));
        assert!(!approvals.approves("off"));
    }
}
