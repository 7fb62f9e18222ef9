//! toolweave's own settings file: what the people who run toolweave decide (which tools code may
//! call, which destructive ones it may call without asking, where the audit log goes), apart from
//! the `mcpServers` files clients share.
//!
//! ```json
//! {
//!   "allow": ["github.*", "memory.*"],
//!   "deny": ["*.delete_*"],
//!   "ask": ["github.merge_*"],
//!   "approve": ["memory.create_entities"],
//!   "unannotated": "allow",
//!   "auditLog": "/var/log/toolweave/audit.jsonl",
//!   "auditLogMaxBytes": 10485760,
//!   "auditLogContents": false,
//!   "shape": "three",
//!   "direct": ["memory.read_graph"],
//!   "pinTools": "on",
//!   "approval": "auto",
//!   "approvalTimeoutMs": 120000,
//!   "identities": {
//!     "ci-bot": { "tokenEnv": "CI_BOT_TOKEN", "deny": ["github.delete_*"],
//!                 "approve": ["github.create_issue"], "rateLimit": 30 }
//!   },
//!   "llm": {"kind": "anthropic", "url": "https://llm.example", "model": "claude-sonnet-4-5",
//!           "apiKeyEnv": "ANTHROPIC_API_KEY"},
//!   "llmSystemPrompts": ["You summarise issues in one sentence."],
//!   "sandbox": true,
//!   "boxes": {"files": {"write": ["~/notes"]}, "legacy-tool": false},
//!   "redact": ["secrets", "email", "phone", "card", "ssn", "nino", "iban"]
//! }
//! ```
//!
//! `"sandbox"` boxes every stdio server whose entry has no `"sandbox"` key of its own, and
//! `"boxes"` boxes particular ones by name (`false`: unboxed); both take what an entry's
//! `"sandbox"` takes (see `sandbox.rs`), with relative paths from this file's folder.
//!
//! `identities` name the bearer tokens an HTTP client may present (each read from its own
//! environment variable), with rules of their own set within the file's.
//!
//! `redact` names what is replaced by a token in everything the model reads (see
//! [`crate::Detector`]); an unknown name is an error naming the detectors there are.
//!
//! Every key is optional; an unknown key is an error naming it. Command-line flags add to the
//! lists (`--allow`, `--deny`, `--ask`, `--approve`, `--direct`, `--redact`) or replace the values
//! (`--unannotated`, `--audit-log`, `--shape`, `--pin-tools`, `--approval`,
//! `--approval-timeout-ms`, `--approval-port`, `--approval-browser`).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::{Error, Result};

/// The settings file's contents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Settings {
    /// Globs over `server.tool` that code may call (all, when empty).
    #[serde(default)]
    pub allow: Vec<String>,
    /// Globs over `server.tool` that code may not call; deny wins over allow.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Globs over `server.tool` whose every call asks the person at the client (approve rules
    /// do not apply to them).
    #[serde(default)]
    pub ask: Vec<String>,
    /// Globs over `server.tool`: destructive tools code may call without anyone being asked.
    #[serde(default)]
    pub approve: Vec<String>,
    /// What calls of tools whose server says nothing about what they change get.
    pub unannotated: Option<crate::Unannotated>,
    /// Where to append one JSON line per execution.
    pub audit_log: Option<PathBuf>,
    /// Size at which the audit log is rotated.
    pub audit_log_max_bytes: Option<u64>,
    /// Whether the audit log records tool arguments and results too.
    #[serde(default)]
    pub audit_log_contents: bool,
    /// Which tools `serve` lists to clients.
    pub shape: Option<Shape>,
    /// Globs over `server.tool`: upstream tools `serve` lists directly beside its own.
    #[serde(default)]
    pub direct: Vec<String>,
    /// Whether tool definitions are pinned on first sight and held when they change.
    pub pin_tools: Option<PinTools>,
    /// What a tool seen for the first time whose definition has findings gets.
    pub check_definitions: Option<CheckDefinitions>,
    /// Whether the result types of tools without an output schema are observed from their
    /// calls and declared as observed.
    pub observe_returns: Option<ObserveReturns>,
    /// How calls in the ask tier ask the person: `auto`, `page` or `elicitation`.
    pub approval: Option<ApprovalMode>,
    /// How long a call waits for an answer at the approval page, in milliseconds.
    pub approval_timeout_ms: Option<u64>,
    /// The loopback port the approval page is served on.
    pub approval_port: Option<u16>,
    /// A command line run with the approval page's address as its last argument (a browser).
    pub approval_browser: Option<String>,
    /// The clients of `serve --http` by the token they present, by name.
    #[serde(default)]
    pub identities: std::collections::BTreeMap<String, IdentitySettings>,
    /// The LLM `llm.ask` and `llm.think` use when the client cannot sample (or always).
    pub llm: Option<LlmProvider>,
    /// The only system prompts code may send with `llm.ask` and `llm.think`, when given.
    pub llm_system_prompts: Option<Vec<String>>,
    /// Where copies of `serve --http` keep what they share (`redis://HOST:PORT/N`), as
    /// `--state` gives it.
    pub state: Option<String>,
    /// `"sandbox"` as written: the box of every stdio server without one of its own.
    #[serde(rename = "sandbox")]
    sandbox_written: Option<serde_json::Value>,
    /// `"boxes"` as written: boxes of particular stdio servers, by name.
    #[serde(rename = "boxes", default)]
    boxes_written: std::collections::BTreeMap<String, serde_json::Value>,
    /// The boxes `"sandbox"` and `"boxes"` give, read by [`load_settings`] (relative paths from
    /// the settings file's folder).
    #[serde(skip)]
    pub boxes: crate::Boxes,
    /// What is replaced by a token in everything the model reads.
    #[serde(default)]
    pub redact: Vec<crate::Detector>,
}

/// One identity of HTTP clients: its token's environment variable and its own rules, set within
/// the settings' rules (it can keep tools out, make them ask or pre-approve them; never let in a
/// tool those rules keep out).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IdentitySettings {
    /// The environment variable holding the identity's bearer token.
    pub token_env: String,
    /// Globs over `server.tool` this identity's code may call (all the settings allow, when
    /// empty).
    #[serde(default)]
    pub allow: Vec<String>,
    /// Globs over `server.tool` this identity's code may not call.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Globs over `server.tool` whose every call asks, for this identity.
    #[serde(default)]
    pub ask: Vec<String>,
    /// Globs over `server.tool`: destructive tools this identity's code may call without asking.
    #[serde(default)]
    pub approve: Vec<String>,
    /// What calls of unannotated tools get for this identity (the settings' value when unset).
    pub unannotated: Option<crate::Unannotated>,
    /// Executions a minute this identity may start, over all its sessions.
    pub rate_limit: Option<std::num::NonZeroU32>,
}

/// How a call in the ask tier asks the person.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalMode {
    /// Through the client's form (elicitation) when it has one, else the approval page.
    #[default]
    Auto,
    /// Through the approval page (and `toolweave approve`), whatever the client has.
    Page,
    /// Only through the client's form.
    Elicitation,
}

/// Whether toolweave pins the tool definitions servers list (see `pins.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PinTools {
    /// Pin each tool on first sight; hold a tool whose definition then changes.
    #[default]
    On,
    /// Take every definition as the server lists it.
    Off,
}

/// Whether toolweave learns what tools without an output schema return from their calls, and
/// declares it as observed (see `observed.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObserveReturns {
    /// Record the shape of each successful call's result, and declare it.
    #[default]
    On,
    /// Neither record nor declare observed results.
    Off,
}

/// What a tool seen for the first time gets when its definition has findings: instructions
/// aimed at the model, directions to move data out, hidden text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckDefinitions {
    /// Held until `toolweave trust` accepts it, as a changed definition is.
    #[default]
    Hold,
    /// Pinned, with the findings logged.
    Warn,
    /// Pinned without being read.
    Off,
}

/// An LLM endpoint of the user's own, for `llm.ask` and `llm.think` when the MCP client does not
/// offer sampling. The key is read from the environment variable named, when a request is sent.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LlmProvider {
    /// Which API the endpoint speaks.
    pub kind: LlmKind,
    /// The endpoint's base URL: `{url}/v1/messages` (Anthropic) or `{url}/chat/completions`
    /// (OpenAI-compatible) is posted to.
    pub url: String,
    /// The model every request asks for.
    pub model: String,
    /// The environment variable holding the API key.
    pub api_key_env: String,
    /// When the provider is used instead of the client's sampling.
    #[serde(default)]
    pub when: LlmWhen,
}

/// Which API an [`LlmProvider`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LlmKind {
    /// The Anthropic Messages API: `POST {url}/v1/messages` with `x-api-key`.
    Anthropic,
    /// An OpenAI-compatible chat completions API: `POST {url}/chat/completions` with a bearer
    /// token.
    Openai,
}

/// When an [`LlmProvider`] answers instead of the client's model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LlmWhen {
    /// When the client did not declare sampling (or there is no client).
    #[default]
    NoSampling,
    /// Always, even when the client could sample.
    Always,
}

/// Which tools `serve` lists to clients besides those listed directly.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    /// `search_tools`, `describe_tools` and `execute_code`: any number of tools, found as needed.
    #[default]
    Three,
    /// `execute_code` alone, its description declaring every tool: for small catalogs.
    Single,
}

/// Reads a settings file. A relative `auditLog` is relative to the file's folder.
pub fn load_settings(path: &Path) -> Result<Settings> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut settings: Settings = serde_json::from_str(&text).map_err(|error| Error::Syntax {
        path: path.to_path_buf(),
        message: format!(
            "{error}; the settings file may have \"allow\", \"deny\", \"ask\", \"approve\", \"unannotated\" (\"allow\" or \"ask\"), \"auditLog\", \"auditLogMaxBytes\", \"auditLogContents\", \"shape\" (\"three\" or \"single\"), \"direct\", \"pinTools\" (\"on\" or \"off\"), \"approval\" (\"auto\", \"page\" or \"elicitation\"), \"approvalTimeoutMs\", \"approvalPort\", \"approvalBrowser\", \"identities\" (each {{\"tokenEnv\", \"allow\", \"deny\", \"ask\", \"approve\", \"unannotated\", \"rateLimit\"}}), \"llm\" ({{\"kind\": \"anthropic\" or \"openai\", \"url\", \"model\", \"apiKeyEnv\", \"when\": \"no-sampling\" or \"always\"}}), \"llmSystemPrompts\", \"state\" (\"redis://HOST:PORT/N\"), \"checkDefinitions\" (\"hold\", \"warn\" or \"off\"), \"observeReturns\" (\"on\" or \"off\"), \"sandbox\" (a box for every stdio server) \"boxes\" ({{\"server\": box}}) and \"redact\" (any of {})",
            crate::Detector::names()
        ),
    })?;
    if let Some(log) = &settings.audit_log
        && log.is_relative()
        && let Some(folder) = path.parent()
    {
        settings.audit_log = Some(folder.join(log));
    }
    settings.boxes = read_boxes(&settings, path)?;
    Ok(settings)
}

/// The boxes of `"sandbox"` and `"boxes"`; `${VAR}` references come from toolweave's
/// environment. Errors name the file and the key.
fn read_boxes(settings: &Settings, path: &Path) -> Result<crate::Boxes> {
    let folder = path.parent().unwrap_or(Path::new("."));
    let lookup = |name: &str| std::env::var(name).ok();
    let expand = |text: &str, key: &str| {
        crate::expand::expand(text, &lookup)
            .map(|expanded| expanded.value().to_owned())
            .map_err(|missing| {
                format!(
                    "{key} uses the variable {}, which is not set in toolweave's environment",
                    missing.name
                )
            })
    };
    let error = |message: String| Error::Syntax {
        path: path.to_path_buf(),
        message,
    };
    let mut boxes = crate::Boxes::default();
    let place = path.display().to_string();
    if let Some(value) = &settings.sandbox_written {
        boxes.every = crate::sandbox::read(value, "\"sandbox\"", folder, &expand)
            .map_err(error)?
            .map(|sandbox| crate::Sandbox {
                place: place.clone(),
                ..sandbox
            });
    }
    for (name, value) in &settings.boxes_written {
        let key = format!("\"boxes\".\"{name}\"");
        let given = crate::sandbox::read(value, &key, folder, &expand)
            .map_err(error)?
            .map(|sandbox| crate::Sandbox {
                place: place.clone(),
                ..sandbox
            });
        boxes.by_server.insert(name.clone(), given);
    }
    Ok(boxes)
}

/// Where toolweave looks for its settings when none is named: `$XDG_CONFIG_HOME/toolweave/
/// settings.json`, else `~/.config/toolweave/settings.json`.
pub fn default_settings_path(
    xdg_config_home: Option<&Path>,
    home: Option<&Path>,
) -> Option<PathBuf> {
    let base = match (xdg_config_home, home) {
        (Some(xdg), _) if xdg.is_absolute() => xdg.to_path_buf(),
        (_, Some(home)) => home.join(".config"),
        _ => return None,
    };
    Some(base.join("toolweave").join("settings.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_key_and_names_an_unknown_one() {
        let dir = std::env::temp_dir().join(format!("toolweave-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("settings.json");
        std::fs::write(
            &path,
            r#"{"allow": ["github.*"], "deny": ["*.delete_*"], "ask": ["github.merge_*"], "approve": ["github.merge_pull_request"], "unannotated": "ask", "auditLog": "audit.jsonl", "auditLogMaxBytes": 1000, "shape": "single", "direct": ["github.get_issue"], "pinTools": "off", "approval": "page", "approvalTimeoutMs": 5000, "approvalPort": 8123, "approvalBrowser": "xdg-open"}"#,
        )
        .unwrap();
        let settings = load_settings(&path).unwrap();
        assert_eq!(settings.allow, ["github.*"]);
        assert_eq!(settings.deny, ["*.delete_*"]);
        assert_eq!(settings.approve, ["github.merge_pull_request"]);
        assert_eq!(settings.ask, ["github.merge_*"]);
        assert_eq!(settings.unannotated, Some(crate::Unannotated::Ask));
        assert_eq!(settings.audit_log, Some(dir.join("audit.jsonl")));
        assert_eq!(settings.audit_log_max_bytes, Some(1000));
        assert_eq!(settings.approval, Some(ApprovalMode::Page));
        assert_eq!(settings.approval_timeout_ms, Some(5000));
        assert_eq!(settings.approval_port, Some(8123));
        assert_eq!(settings.approval_browser.as_deref(), Some("xdg-open"));
        assert_eq!(settings.shape, Some(Shape::Single));
        assert_eq!(settings.direct, ["github.get_issue"]);
        assert_eq!(settings.pin_tools, Some(PinTools::Off));
        assert_eq!(settings.llm, None);

        std::fs::write(
            &path,
            r#"{"llm": {"kind": "openai", "url": "http://127.0.0.1:9", "model": "m", "apiKeyEnv": "KEY", "when": "always"}, "llmSystemPrompts": ["Be brief."]}"#,
        )
        .unwrap();
        let settings = load_settings(&path).unwrap();
        assert_eq!(
            settings.llm,
            Some(LlmProvider {
                kind: LlmKind::Openai,
                url: "http://127.0.0.1:9".to_owned(),
                model: "m".to_owned(),
                api_key_env: "KEY".to_owned(),
                when: LlmWhen::Always,
            })
        );
        assert_eq!(
            settings.llm_system_prompts,
            Some(vec!["Be brief.".to_owned()])
        );
        std::fs::write(&path, r#"{"state": "redis://127.0.0.1:6379/2"}"#).unwrap();
        let settings = load_settings(&path).unwrap();
        assert_eq!(settings.state.as_deref(), Some("redis://127.0.0.1:6379/2"));
        std::fs::write(
            &path,
            r#"{"llm": {"kind": "gemini", "url": "u", "model": "m", "apiKeyEnv": "K"}}"#,
        )
        .unwrap();
        let error = load_settings(&path).unwrap_err().to_string();
        assert!(error.contains("unknown variant `gemini`"), "{error}");

        std::fs::write(&path, r#"{"shape": "one"}"#).unwrap();
        let error = load_settings(&path).unwrap_err().to_string();
        assert!(error.contains("unknown variant `one`"), "{error}");

        std::fs::write(&path, r#"{"redact": ["email", "secrets"]}"#).unwrap();
        let settings = load_settings(&path).unwrap();
        assert_eq!(
            settings.redact,
            [crate::Detector::Email, crate::Detector::Secrets]
        );
        std::fs::write(&path, r#"{"redact": ["emails"]}"#).unwrap();
        let error = load_settings(&path).unwrap_err().to_string();
        assert!(error.contains("unknown variant `emails`"), "{error}");
        assert!(error.contains("`secrets`, `email`, `phone`"), "{error}");
        assert!(error.contains("\"three\" or \"single\""), "{error}");

        std::fs::write(&path, r#"{"alow": ["github.*"]}"#).unwrap();
        let error = load_settings(&path).unwrap_err().to_string();
        assert!(error.contains("unknown field `alow`"), "{error}");
        assert!(error.contains(&path.display().to_string()), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_default_path_follows_xdg() {
        assert_eq!(
            default_settings_path(Some(Path::new("/x")), Some(Path::new("/home/u"))),
            Some(PathBuf::from("/x/toolweave/settings.json"))
        );
        assert_eq!(
            default_settings_path(None, Some(Path::new("/home/u"))),
            Some(PathBuf::from("/home/u/.config/toolweave/settings.json"))
        );
        assert_eq!(default_settings_path(None, None), None);
    }
}

#[cfg(test)]
mod box_tests {
    use super::*;
    use crate::{Network, Transport};

    #[test]
    fn boxes_go_to_the_stdio_entries_without_one_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::create_dir(dir.path().join("notes")).unwrap();
        std::fs::write(
            &path,
            r#"{"sandbox": {"network": "loopback"}, "boxes": {"files": {"write": ["notes"]}, "legacy": false, "remote": true, "missing": true}}"#,
        )
        .unwrap();
        let settings = load_settings(&path).unwrap();
        let mut config = crate::parse_str(
            r#"{"mcpServers": {
                "files": {"command": "f"},
                "legacy": {"command": "l"},
                "plain": {"command": "p"},
                "own": {"command": "o", "sandbox": {"network": "none"}},
                "off": {"command": "x", "sandbox": false},
                "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp"}
            }}"#,
            Path::new("/etc/tw/mcp.json"),
        )
        .unwrap();
        let unused = config.give_boxes(&settings.boxes);
        assert_eq!(unused, ["missing", "remote"]);
        let boxed = |name: &str| {
            let server = config.servers.iter().find(|s| s.name == name).unwrap();
            match &server.transport {
                Transport::Stdio { sandbox, .. } => sandbox.clone(),
                _ => panic!("{name} is not stdio"),
            }
        };
        let files = boxed("files").unwrap();
        assert_eq!(files.write, [dir.path().join("notes")]);
        assert_eq!(files.network, Network::None);
        assert_eq!(
            files.written_at(),
            format!("\"boxes\".\"files\" in {}", path.display())
        );
        assert_eq!(boxed("legacy"), None);
        let plain = boxed("plain").unwrap();
        assert_eq!(plain.network, Network::Loopback);
        assert_eq!(plain.key_of("read"), "\"sandbox\".\"read\"");
        assert_eq!(plain.place, path.display().to_string());
        let own = boxed("own").unwrap();
        assert_eq!(own.network, Network::None);
        assert_eq!(
            own.written_at(),
            "\"sandbox\" in its entry in /etc/tw/mcp.json"
        );
        assert_eq!(boxed("off"), None);

        std::fs::write(&path, r#"{"boxes": {"files": {"read": "~/notes"}}}"#).unwrap();
        let error = load_settings(&path).unwrap_err().to_string();
        assert!(
            error.contains("\"boxes\".\"files\".\"read\" must be a list of strings"),
            "{error}"
        );
    }
}
