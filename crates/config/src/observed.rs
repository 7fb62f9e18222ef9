//! The result types observed of tools that declare no output schema, per server: the folder
//! `observed` beside the pins.
//!
//! Each entry is a tool's observed result shape (a JSON Schema of types and key names, never
//! values; the catalog infers and reads it) with the SHA-256 of the definition it was observed
//! under and how many calls it was learned from. A server lists a changed definition: the entry
//! no longer applies, and the next call of the tool starts it again. The files are written as the
//! pins are: one per server, owner-only, under a lock file beside the folder, by temporary file
//! and rename; but apart from the pins, so that a call never rewrites the definitions the user
//! accepted, and a running gateway's check of the pins is not set off by one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Error, Result};

/// What the user can do about an observed-results file that does not parse.
const UNREADABLE_FIX: &str = "this file is written by toolweave: remove it, and the result types of its server's tools are observed again";

/// The most tools one server's file keeps: a tool seen after that is not recorded.
pub const MAX_OBSERVED_TOOLS: usize = 1_000;

/// Where toolweave keeps observed result types: the folder `observed` beside the pins folder
/// (`$XDG_CONFIG_HOME/toolweave/` or `~/.config/toolweave/`).
pub fn default_observed_folder(
    xdg_config_home: Option<&Path>,
    home: Option<&Path>,
) -> Option<PathBuf> {
    crate::default_trust_path(xdg_config_home, home).map(|path| path.with_file_name("observed"))
}

/// One tool's observed result type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservedTool {
    /// `sha256:` and the hex digest of the definition the calls were made under.
    pub definition: String,
    /// How many successful calls it was learned from.
    pub calls: u64,
    /// The shape of their results, as a JSON Schema of types and key names.
    pub returns: Value,
}

/// One server's observed result types: its file in the folder.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerObserved {
    /// The server's name, as configured.
    server: String,
    /// By tool name, as the server lists it.
    #[serde(default)]
    pub tools: BTreeMap<String, ObservedTool>,
}

/// The folder of observed result types: one file per server.
#[derive(Debug, Clone)]
pub struct ObservedFolder {
    path: PathBuf,
}

impl ObservedFolder {
    /// The observed result types kept in the folder at `path`.
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file of `server`'s observed result types, named as its pins file is.
    pub fn file_of(&self, server: &str) -> PathBuf {
        crate::pins::server_file(&self.path, server)
    }

    /// What is kept for `server`; nothing when it has no file.
    pub fn load(&self, server: &str) -> Result<ServerObserved> {
        let path = self.file_of(server);
        let observed: ServerObserved = crate::files::read_kept(&path, UNREADABLE_FIX)?;
        if observed.server.is_empty() {
            return Ok(ServerObserved {
                server: server.to_owned(),
                tools: BTreeMap::new(),
            });
        }
        if observed.server != server {
            return Err(Error::Syntax {
                path,
                message: format!(
                    "it holds the observed results of server \"{}\", not of \"{server}\"; {UNREADABLE_FIX}",
                    observed.server
                ),
            });
        }
        Ok(observed)
    }

    /// Under the lock, reads `server`'s file, lets `change` change it (`true`: it changed),
    /// keeps at most [`MAX_OBSERVED_TOOLS`] tools, and writes it back (owner-only) if it changed.
    /// A file that does not parse is replaced. `change`'s view of the file is passed on.
    pub fn update(
        &self,
        server: &str,
        change: impl FnOnce(&mut ServerObserved) -> bool,
    ) -> Result<ServerObserved> {
        let lock = crate::pins::lock_folder(&self.path, self.path.with_extension("lock"))?;
        // A file that does not parse holds nothing worth keeping: shapes are observed again.
        let mut observed = self.load(server).unwrap_or_else(|_| ServerObserved {
            server: server.to_owned(),
            tools: BTreeMap::new(),
        });
        let changed = change(&mut observed);
        while observed.tools.len() > MAX_OBSERVED_TOOLS {
            observed.tools.pop_last();
        }
        if changed {
            let path = self.file_of(server);
            let failed = |message: String| Error::Write {
                path: path.clone(),
                message,
            };
            let mut text = serde_json::to_string_pretty(&observed)
                .map_err(|error| failed(error.to_string()))?;
            text.push('\n');
            crate::files::replace_file(&path, text.as_bytes(), None, 0o600)
                .map_err(|error| failed(error.to_string()))?;
        }
        drop(lock);
        Ok(observed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_are_kept_per_server_owner_only_and_a_bad_file_is_replaced() {
        let root = tempfile::tempdir().unwrap();
        let folder = ObservedFolder::new(root.path().join("observed"));
        assert!(folder.load("math").unwrap().tools.is_empty());
        let entry = ObservedTool {
            definition: "sha256:00".to_owned(),
            calls: 1,
            returns: json!({"type": "string"}),
        };
        folder
            .update("math", |observed| {
                observed.tools.insert("add".to_owned(), entry.clone());
                true
            })
            .unwrap();
        assert_eq!(folder.load("math").unwrap().tools["add"], entry);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(folder.file_of("math"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(
            folder.file_of("My Server"),
            root.path().join("observed/%4Dy%20%53erver.json")
        );
        std::fs::write(folder.file_of("math"), "{not json").unwrap();
        assert!(folder.load("math").is_err());
        let replaced = folder.update("math", |_| true).unwrap();
        assert!(replaced.tools.is_empty());
        assert!(folder.load("math").unwrap().tools.is_empty());
    }
}
