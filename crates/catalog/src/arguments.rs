//! The argument names a tool's input schema declares, and which of them a name it does not
//! declare most likely meant.
//!
//! Models pass arguments a tool does not take: a near miss of a declared name (`querry`,
//! `filePath` for `file_path`), a word another server uses for the same thing (`ttl` for
//! `expire_seconds`, `query` for `sql`), or something the tool never had. A server that is not
//! strict ignores them, and the call does something else than the model meant. [`meant_argument`]
//! tells a near miss from the rest, so the caller can refuse the one and warn about the other.

use serde_json::{Map, Value};

use crate::text::{edit_distance, words};

/// What a tool's input schema says about the names of its arguments.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeclaredArguments {
    /// The declared property names, in the schema's order (those of `allOf`, `anyOf` and `oneOf`
    /// members after the schema's own).
    pub names: Vec<String>,
    /// Whether the schema takes names it does not list: `additionalProperties` true or a schema,
    /// `patternProperties`, or a `$ref` toolweave does not follow. Its word is taken: no name is
    /// undeclared.
    pub open: bool,
    /// Required properties whose schema has a `default`, with that default: a call that leaves
    /// one out gets it, as the server would.
    pub defaults: Vec<(String, Value)>,
}

impl DeclaredArguments {
    /// What `schema` (a tool's `inputSchema`) declares.
    pub fn of(schema: &Value) -> Self {
        let mut declared = Self::default();
        let Value::Object(schema) = schema else {
            // `true` (anything) or something an upstream sent that is no schema.
            declared.open = true;
            return declared;
        };
        declared.add(schema);
        for key in ["allOf", "anyOf", "oneOf"] {
            for member in schema
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match member {
                    Value::Object(member) => declared.add(member),
                    _ => declared.open = true,
                }
            }
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if let Some(Value::Object(properties)) = schema.get("properties") {
            declared.defaults = properties
                .iter()
                .filter(|(name, _)| required.contains(&name.as_str()))
                .filter_map(|(name, property)| {
                    Some((name.clone(), property.get("default")?.clone()))
                })
                .collect();
        }
        declared
    }

    /// Adds the names one (sub)schema declares.
    fn add(&mut self, schema: &Map<String, Value>) {
        if let Some(Value::Object(properties)) = schema.get("properties") {
            for name in properties.keys() {
                if !self.names.contains(name) {
                    self.names.push(name.clone());
                }
            }
        }
        let additional = schema
            .get("additionalProperties")
            .is_some_and(|additional| additional != &Value::Bool(false));
        let patterns = schema
            .get("patternProperties")
            .and_then(Value::as_object)
            .is_some_and(|patterns| !patterns.is_empty());
        if additional || patterns || schema.contains_key("$ref") {
            self.open = true;
        }
    }

    /// Whether `name` is declared (or the schema takes any name).
    pub fn declares(&self, name: &str) -> bool {
        self.open || self.names.iter().any(|declared| declared == name)
    }
}

/// Words models use for the same argument: a name none of whose words is declared, but one of
/// whose words shares a group with a declared name's word, meant that name. Small on purpose:
/// each group is a swap seen in real calls, and a wrong guess refuses a call.
const SWAPPED_WORDS: &[&[&str]] = &[
    &[
        "ttl",
        "expire",
        "expires",
        "expiry",
        "expiration",
        "lifetime",
    ],
    &["query", "sql", "statement"],
    &["limit", "max", "count", "top"],
    &["path", "file", "filename", "filepath"],
    &["dir", "directory", "folder"],
    &["url", "uri", "link", "href"],
    &["text", "content", "body"],
    &["cmd", "command"],
    &["lang", "language"],
    &["repo", "repository"],
];

/// The declared name that `given` (a name the schema does not declare) most likely meant: the
/// same but for case, `_`, `-` and camelCase humps (`filePath` for `file_path`); else the one
/// declared name within a small edit distance (`querry` for `query`); else the one declared name
/// sharing a word, or a word models swap for it (`ttl` for `expire_seconds`, `path` for
/// `file_path`). `None` when no declared name is close, or more than one is equally close.
pub fn meant_argument<'a>(given: &str, declared: &'a [String]) -> Option<&'a str> {
    // A name longer than any argument name is no near miss; bounded work either way.
    if given.len() > 128 {
        return None;
    }
    let folded = fold(given);
    if let Some(found) = only(declared, |name| fold(name) == folded) {
        return Some(found);
    }
    let limit = match folded.chars().count() {
        0..=3 => 0,
        4..=5 => 1,
        _ => 2,
    };
    if limit > 0 {
        for distance in 1..=limit {
            let close = |name: &String| edit_distance(&fold(name), &folded, distance) <= distance;
            match declared.iter().filter(|name| close(name)).count() {
                0 => {}
                1 => return declared.iter().find(|name| close(name)).map(String::as_str),
                _ => return None,
            }
        }
    }
    let mut meant: Vec<String> = Vec::new();
    for word in words(given) {
        for group in SWAPPED_WORDS
            .iter()
            .filter(|group| group.contains(&word.as_str()))
        {
            meant.extend(group.iter().map(|swapped| (*swapped).to_owned()));
        }
        meant.push(word);
    }
    only(declared, |name| {
        words(name).iter().any(|word| meant.contains(word))
    })
}

/// The one name of `names` that `matches`, when exactly one does.
fn only(names: &[String], matches: impl Fn(&String) -> bool) -> Option<&str> {
    let mut found = names.iter().filter(|name| matches(name));
    let first = found.next()?;
    found.next().is_none().then_some(first.as_str())
}

/// `name` lowercased without `_` and `-`: `filePath`, `file_path` and `File-Path` alike.
fn fold(name: &str) -> String {
    name.chars()
        .filter(|character| !matches!(character, '_' | '-'))
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn near_misses_name_the_argument_meant() {
        let redis = names(&["key", "value", "expire_seconds"]);
        assert_eq!(meant_argument("ttl", &redis), Some("expire_seconds"));
        assert_eq!(
            meant_argument("expireSeconds", &redis),
            Some("expire_seconds")
        );
        assert_eq!(meant_argument("Key", &redis), Some("key"));
        assert_eq!(meant_argument("valu", &redis), Some("value"));
        assert_eq!(
            meant_argument("expire_secnods", &redis),
            Some("expire_seconds")
        );
        assert_eq!(meant_argument("owner", &redis), None);
        let postgres = names(&["sql"]);
        assert_eq!(meant_argument("query", &postgres), Some("sql"));
        let sqlite = names(&["query"]);
        assert_eq!(meant_argument("limit", &sqlite), None);
        assert_eq!(meant_argument("querry", &sqlite), Some("query"));
        let search = names(&["query", "max_results"]);
        assert_eq!(meant_argument("limit", &search), Some("max_results"));
        let files = names(&["file_path", "content"]);
        assert_eq!(meant_argument("path", &files), Some("file_path"));
        assert_eq!(meant_argument("text", &files), Some("content"));
        // Two names equally close: no guess.
        let two = names(&["page_size", "page_token"]);
        assert_eq!(meant_argument("page", &two), None);
        // Short names differ by one letter too often to be guessed.
        assert_eq!(meant_argument("ids", &names(&["id"])), None);
        assert_eq!(meant_argument(&"x".repeat(10_000), &redis), None);
    }

    #[test]
    fn a_schema_declares_its_properties_and_may_take_any() {
        let closed = DeclaredArguments::of(&json!({
            "type": "object",
            "properties": {"a": {}, "scale": {"default": "css"}, "b": {"default": 1}},
            "required": ["a", "scale"]
        }));
        assert_eq!(closed.names, names(&["a", "scale", "b"]));
        assert!(!closed.open);
        assert!(!closed.declares("c"));
        assert_eq!(closed.defaults, vec![("scale".to_owned(), json!("css"))]);
        for open in [
            json!({"properties": {"a": {}}, "additionalProperties": true}),
            json!({"properties": {"a": {}}, "additionalProperties": {"type": "string"}}),
            json!({"patternProperties": {"^x": {}}}),
            json!({"$ref": "#/$defs/args"}),
            json!(true),
        ] {
            assert!(DeclaredArguments::of(&open).declares("c"), "{open}");
        }
        let composed = DeclaredArguments::of(&json!({
            "allOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}]
        }));
        assert_eq!(composed.names, names(&["a", "b"]));
        assert!(!composed.open);
    }
}
