//! Where MCP clients keep their config files: the sources discovery reads, in precedence order,
//! and where each one holds its servers.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::servers::server_map;

/// Where to look, passed in so that nothing here reads the process's environment.
#[derive(Debug, Clone, Copy)]
pub struct Places<'a> {
    /// The user's home directory; `None` skips every source under it.
    pub home: Option<&'a Path>,
    /// The project directory: the current directory.
    pub cwd: &'a Path,
    /// This program (`std::env::current_exe()`), to recognise entries that start toolweave.
    pub this_program: Option<&'a Path>,
    /// The file of trusted project entries ([`crate::default_trust_path`]); `None` trusts
    /// nothing there.
    pub trust_file: Option<&'a Path>,
}

/// One place a server list may be, in precedence order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// `~/.claude.json`, `projects["<cwd>"].mcpServers`.
    ClaudeCodeLocal,
    /// `<cwd>/.mcp.json`.
    Project,
    /// `~/.claude.json`, `mcpServers`.
    ClaudeCodeUser,
    /// `<cwd>/.cursor/mcp.json`.
    CursorProject,
    /// `~/.cursor/mcp.json`.
    CursorUser,
    /// `<cwd>/.vscode/mcp.json`.
    VsCode,
    /// Claude Desktop's `claude_desktop_config.json`.
    ClaudeDesktop,
}

impl SourceKind {
    /// Every source, highest precedence first.
    pub const ALL: [SourceKind; 7] = [
        SourceKind::ClaudeCodeLocal,
        SourceKind::Project,
        SourceKind::ClaudeCodeUser,
        SourceKind::CursorProject,
        SourceKind::CursorUser,
        SourceKind::VsCode,
        SourceKind::ClaudeDesktop,
    ];

    /// A short name for people: which client, which scope.
    pub fn describe(self) -> &'static str {
        match self {
            SourceKind::ClaudeCodeLocal => "Claude Code, this project",
            SourceKind::Project => "project .mcp.json",
            SourceKind::ClaudeCodeUser => "Claude Code, every project",
            SourceKind::CursorProject => "Cursor, this project",
            SourceKind::CursorUser => "Cursor, every project",
            SourceKind::VsCode => "VS Code, this project",
            SourceKind::ClaudeDesktop => "Claude Desktop",
        }
    }

    /// The file this source lives in; `None` when it is under a home directory not known.
    pub fn path(self, places: &Places<'_>) -> Option<PathBuf> {
        let home = places.home;
        match self {
            SourceKind::ClaudeCodeLocal | SourceKind::ClaudeCodeUser => {
                home.map(|home| home.join(".claude.json"))
            }
            SourceKind::Project => Some(places.cwd.join(".mcp.json")),
            SourceKind::CursorProject => Some(places.cwd.join(".cursor").join("mcp.json")),
            SourceKind::CursorUser => home.map(|home| home.join(".cursor").join("mcp.json")),
            SourceKind::VsCode => Some(places.cwd.join(".vscode").join("mcp.json")),
            SourceKind::ClaudeDesktop => home.map(claude_desktop_config),
        }
    }

    /// Where in the file the servers are, for messages: `mcpServers`, `servers` or
    /// `projects["<cwd>"].mcpServers`.
    pub fn key(self, cwd: &Path) -> String {
        match self {
            SourceKind::ClaudeCodeLocal => format!("projects[{:?}].mcpServers", cwd.display()),
            SourceKind::VsCode => "servers".to_owned(),
            _ => "mcpServers".to_owned(),
        }
    }

    /// The project's own file of this source, as the project folder names it (`.mcp.json`,
    /// `.cursor/mcp.json`, `.vscode/mcp.json`); `None` for files under the home directory.
    pub fn project_file(self) -> Option<&'static str> {
        match self {
            SourceKind::Project => Some(".mcp.json"),
            SourceKind::CursorProject => Some(".cursor/mcp.json"),
            SourceKind::VsCode => Some(".vscode/mcp.json"),
            _ => None,
        }
    }

    /// Whether the file is an editor's (VS Code, Cursor), whose entries may use the editor's
    /// variables such as `${workspaceFolder}`.
    pub(super) fn is_editor(self) -> bool {
        matches!(
            self,
            SourceKind::CursorProject | SourceKind::CursorUser | SourceKind::VsCode
        )
    }

    /// The server map of this source in a parsed file, if it has one.
    pub(super) fn servers_in<'a>(
        self,
        top: &'a Map<String, Value>,
        cwd: &Path,
    ) -> Option<&'a Value> {
        match self {
            SourceKind::ClaudeCodeLocal => {
                let projects = top.get("projects")?.as_object()?;
                project_keys(cwd)
                    .iter()
                    .find_map(|key| projects.get(key))?
                    .get("mcpServers")
            }
            SourceKind::ClaudeCodeUser => top.get("mcpServers"),
            _ => server_map(top),
        }
    }
}

/// Claude Desktop's config file under `home`, for this operating system.
pub fn claude_desktop_config(home: &Path) -> PathBuf {
    if cfg!(target_os = "macos") {
        home.join("Library/Application Support/Claude/claude_desktop_config.json")
    } else {
        home.join(".config/Claude/claude_desktop_config.json")
    }
}

/// The keys Claude Code may have used for this project in `projects`: the directory as given,
/// and with symbolic links resolved.
pub(crate) fn project_keys(cwd: &Path) -> Vec<String> {
    let mut keys = vec![cwd.display().to_string()];
    if let Ok(canonical) = cwd.canonicalize() {
        let canonical = canonical.display().to_string();
        if !keys.contains(&canonical) {
            keys.push(canonical);
        }
    }
    keys
}

/// The file and the sources read from it, in precedence order.
pub(super) fn files(places: &Places<'_>) -> Vec<(PathBuf, Vec<SourceKind>)> {
    let mut files: Vec<(PathBuf, Vec<SourceKind>)> = Vec::new();
    for kind in SourceKind::ALL {
        let Some(path) = kind.path(places) else {
            continue;
        };
        match files.iter_mut().find(|(known, _)| *known == path) {
            Some((_, kinds)) => kinds.push(kind),
            None => files.push((path, vec![kind])),
        }
    }
    files
}
