//! `${VAR}` references in config values, resolved from toolweave's environment at load time.
//!
//! Forms, as MCP clients write them:
//! - `${VAR}` anywhere in a value: the variable's value; an unset variable is an error.
//! - `${VAR:-default}`: the variable's value, or `default` when it is unset or empty.
//! - `env:VAR` as the whole value: the variable's value.
//!
//! `${` not followed by a variable name and `}` (or `:-`) is kept as written, so a shell snippet
//! such as `${1}` passes through. Values often carry secrets (tokens in headers, keys in URLs), so
//! an [`Expanded`] keeps the text as written beside the value: the written form is what `Debug`,
//! `Display` and every message show; the value goes only to the upstream server.

use std::fmt;

/// A config value with its `${VAR}` references resolved, and the text as written in the file.
///
/// `Debug` and `Display` show the written text only: the resolved value may hold a secret.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Expanded {
    written: String,
    value: String,
}

impl Expanded {
    /// A value used as is, without looking for variables (for configs built in code).
    pub fn literal(text: impl Into<String>) -> Self {
        let text = text.into();
        Self {
            written: text.clone(),
            value: text,
        }
    }

    /// A value read from a server's env file: shown as the variable's name and the file.
    pub(crate) fn from_env_file(name: &str, file: &std::path::Path, value: String) -> Self {
        Self {
            written: format!("<{name} from {}>", file.display()),
            value,
        }
    }

    /// The text as written in the config file, with its `${VAR}` references: safe to show.
    pub fn as_written(&self) -> &str {
        &self.written
    }

    /// The resolved value, for the upstream server only: never log or show it.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Whether the value came from at least one variable.
    pub fn uses_variables(&self) -> bool {
        self.written != self.value
    }
}

impl fmt::Debug for Expanded {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.written, formatter)
    }
}

impl fmt::Display for Expanded {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.written)
    }
}

impl From<&str> for Expanded {
    fn from(text: &str) -> Self {
        Self::literal(text)
    }
}

impl From<String> for Expanded {
    fn from(text: String) -> Self {
        Self::literal(text)
    }
}

/// A `${VAR}` whose variable is not set (and that has no default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MissingVariable {
    /// The variable's name.
    pub(crate) name: String,
}

/// Resolves the references in `text` with `lookup`.
pub(crate) fn expand(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Expanded, MissingVariable> {
    if let Some(name) = text.strip_prefix("env:")
        && is_variable_name(name)
    {
        let value = lookup(name).ok_or_else(|| MissingVariable {
            name: name.to_owned(),
        })?;
        return Ok(Expanded {
            written: text.to_owned(),
            value,
        });
    }
    let mut value = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        value.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match reference(after) {
            Some((name, default, used)) => {
                match (lookup(name), default) {
                    (Some(found), Some(default)) if found.is_empty() => value.push_str(default),
                    (Some(found), _) => value.push_str(&found),
                    (None, Some(default)) => value.push_str(default),
                    (None, None) => {
                        return Err(MissingVariable {
                            name: name.to_owned(),
                        });
                    }
                }
                rest = &after[used..];
            }
            None => {
                value.push_str("${");
                rest = after;
            }
        }
    }
    value.push_str(rest);
    Ok(Expanded {
        written: text.to_owned(),
        value,
    })
}

/// After `${`: the name, the default (after `:-`) and the bytes up to and with the closing `}`.
fn reference(after: &str) -> Option<(&str, Option<&str>, usize)> {
    let name_end = after
        .char_indices()
        .find(|(_, character)| !(character.is_ascii_alphanumeric() || *character == '_'))
        .map_or(after.len(), |(index, _)| index);
    let name = &after[..name_end];
    if !is_variable_name(name) {
        return None;
    }
    let tail = &after[name_end..];
    if tail.starts_with('}') {
        return Some((name, None, name_end + 1));
    }
    let default_text = tail.strip_prefix(":-")?;
    let close = default_text.find('}')?;
    Some((name, Some(&default_text[..close]), name_end + 2 + close + 1))
}

fn is_variable_name(name: &str) -> bool {
    let mut characters = name.chars();
    characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && characters.all(|character| character.is_ascii_alphanumeric() || character == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".to_owned()),
            "EMPTY" => Some(String::new()),
            "HOST" => Some("example.com".to_owned()),
            _ => None,
        }
    }

    fn value(text: &str) -> Result<String, String> {
        expand(text, &lookup)
            .map(|expanded| expanded.value().to_owned())
            .map_err(|missing| missing.name)
    }

    #[test]
    fn references_are_replaced() {
        assert_eq!(value("Bearer ${TOKEN}"), Ok("Bearer s3cret".to_owned()));
        assert_eq!(
            value("https://${HOST}/mcp?key=${TOKEN}"),
            Ok("https://example.com/mcp?key=s3cret".to_owned())
        );
        assert_eq!(value("env:TOKEN"), Ok("s3cret".to_owned()));
        assert_eq!(value("no variables"), Ok("no variables".to_owned()));
    }

    #[test]
    fn defaults_apply_when_unset_or_empty() {
        assert_eq!(value("${UNSET:-fallback}"), Ok("fallback".to_owned()));
        assert_eq!(value("${EMPTY:-fallback}"), Ok("fallback".to_owned()));
        assert_eq!(value("${TOKEN:-fallback}"), Ok("s3cret".to_owned()));
        assert_eq!(value("${UNSET:-}x"), Ok("x".to_owned()));
    }

    #[test]
    fn an_unset_variable_is_named() {
        assert_eq!(value("Bearer ${API_KEY}"), Err("API_KEY".to_owned()));
        assert_eq!(value("env:API_KEY"), Err("API_KEY".to_owned()));
    }

    #[test]
    fn text_that_is_not_a_reference_stays() {
        assert_eq!(
            value("echo ${1} $HOME ${"),
            Ok("echo ${1} $HOME ${".to_owned())
        );
        assert_eq!(value("${TOKEN"), Ok("${TOKEN".to_owned()));
        assert_eq!(value("env:not a name"), Ok("env:not a name".to_owned()));
    }

    #[test]
    fn the_written_form_is_what_shows() {
        let expanded = expand("Bearer ${TOKEN}", &lookup).unwrap();
        assert_eq!(expanded.to_string(), "Bearer ${TOKEN}");
        assert_eq!(format!("{expanded:?}"), "\"Bearer ${TOKEN}\"");
        assert!(expanded.uses_variables());
        assert!(!Expanded::literal("plain").uses_variables());
    }
}
