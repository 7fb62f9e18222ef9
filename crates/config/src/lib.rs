//! toolweave's configuration: the `mcpServers` files users already have, and toolweave's own
//! limits.
//!
//! Raw file contents are parsed into `raw` types that accept exactly the keys MCP clients write,
//! then resolved once into [`Config`]. Every error names the file, the server and the key to change.
//!
//! `${VAR}` (and `${VAR:-default}`, and `env:VAR` as a whole value) in a server's `url`,
//! `headers`, `env` and `args` are resolved from toolweave's environment when the file is loaded;
//! an unset variable is an error naming the file, the server, the key and the variable. Resolved
//! values keep their written form beside them ([`Expanded`]): messages and logs show that form,
//! so a secret passed through a variable is never printed.
//!
//! Without a file given, [`discover`] reads the files MCP clients write (Claude Code, Cursor,
//! VS Code, Claude Desktop) in a fixed precedence, and [`plan`] / [`apply`] register toolweave in
//! one of them (`toolweave init`). Entries of a project's own files start only once trusted
//! ([`Trusted`], `toolweave trust`).

#![cfg_attr(
    test,
    allow(
        clippy::too_many_lines,
        reason = "a test reads top to bottom as one scenario"
    )
)]

mod discover;
mod envfile;
mod expand;
mod files;
mod install;
mod jsonc;
mod limits;
mod oauth;
mod observed;
mod pins;
mod policy;
mod redact;
mod sandbox;
mod servers;
mod settings;
mod trust;

pub use discover::{
    Discovery, FRONTS_VARIABLE, FoundServer, Places, Source, SourceKind, SourceState, Status,
    claude_desktop_config, discover,
};
pub use expand::Expanded;
pub use files::replace_file;
pub use install::{Client, EntryChange, Install, Plan, apply, plan};
pub use limits::Limits;
pub use oauth::OAuthSettings;
pub use observed::{
    MAX_OBSERVED_TOOLS, ObservedFolder, ObservedTool, ServerObserved, default_observed_folder,
};
pub use pins::{FileStamp, Pin, PinsByTool, PinsFolder, ServerPins, default_pins_folder};
pub use policy::{Denial, Policy, ToolGlobs, ToolName, Unannotated, UnmatchedRule};
pub use redact::Detector;
pub use sandbox::{Boxes, HostPort, Network, SANDBOX_KEY, Sandbox};
pub use servers::{
    Config, Note, ServerConfig, Transport, load_file, parse_str, parse_str_with_env,
};
pub use settings::{
    ApprovalMode, CheckDefinitions, IdentitySettings, LlmKind, LlmProvider, LlmWhen,
    ObserveReturns, PinTools, Settings, Shape, default_settings_path, load_settings,
};
pub use trust::{Trusted, default_trust_path, fingerprint};

use std::path::PathBuf;

/// Errors reading or resolving configuration. Each names what to change.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read at all.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file that was asked for.
        path: PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// The file is not valid JSON, or its top level has the wrong shape.
    #[error("{path}: {message}")]
    Syntax {
        /// The file (or `<inline>`).
        path: PathBuf,
        /// What is wrong, with line and column when known.
        message: String,
    },
    /// One server entry is wrong.
    #[error("{path}: server \"{server}\": {message}")]
    Server {
        /// The file (or `<inline>`).
        path: PathBuf,
        /// The key under `mcpServers`.
        server: String,
        /// What is wrong and what to change.
        message: String,
    },
    /// A client's config file could not be updated.
    #[error("{path}: {message}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a JSON value is, with its article ("an array", "a string", "null"), for messages that
/// say what was found where something else was expected: in a config file, a request, a tool's
/// answer or guest code's content block.
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
