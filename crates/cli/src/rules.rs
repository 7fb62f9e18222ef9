//! toolweave's settings file and the rules in it, as every command reads them.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The settings file `path`, else the default one when it exists, else no settings.
pub(crate) fn settings_file(path: Option<&Path>) -> Result<toolweave_config::Settings> {
    let path = match path {
        Some(path) => Some(path.to_owned()),
        None => default_settings_path().filter(|path| path.is_file()),
    };
    match path {
        Some(path) => Ok(toolweave_config::load_settings(&path)?),
        None => Ok(toolweave_config::Settings::default()),
    }
}

/// Where the settings file is when none is named (whether or not it exists yet).
pub(crate) fn default_settings_path() -> Option<PathBuf> {
    toolweave_config::default_settings_path(
        std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .as_deref(),
        std::env::var_os("HOME")
            .filter(|home| !home.is_empty())
            .map(PathBuf::from)
            .as_deref(),
    )
}

/// The rules the settings (and the flags added to them) set.
pub(crate) fn policy_of(settings: &toolweave_config::Settings) -> Result<toolweave_config::Policy> {
    rules(
        &settings.allow,
        &settings.deny,
        &settings.ask,
        &settings.approve,
    )
    .map(|policy| policy.with_unannotated(settings.unannotated.unwrap_or_default()))
}

pub(crate) fn rules(
    allow: &[String],
    deny: &[String],
    ask: &[String],
    approve: &[String],
) -> Result<toolweave_config::Policy> {
    toolweave_config::Policy::new(allow, deny)
        .and_then(|policy| policy.with_ask(ask))
        .and_then(|policy| policy.with_approve(approve))
        .map_err(|error| anyhow::anyhow!("{error}"))
}

/// Each identity of the settings with its own rules (not set within the settings'), for
/// checking that each rule matches a tool.
pub(crate) fn identity_rules(
    settings: &toolweave_config::Settings,
) -> Result<Vec<(String, toolweave_config::Policy)>> {
    settings
        .identities
        .iter()
        .map(|(name, identity)| {
            rules(
                &identity.allow,
                &identity.deny,
                &identity.ask,
                &identity.approve,
            )
            .with_context(|| format!("identity \"{name}\""))
            .map(|rules| (name.clone(), rules))
        })
        .collect()
}
