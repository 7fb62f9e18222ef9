//! What the catalog keeps of a tool's definition besides names and text: its JSON Schemas as
//! compact JSON text, shared and parsed when read, and its annotations as typed hints.
//!
//! A catalog of thousands of tools holds thousands of schemas, and a parsed schema is a tree of
//! small allocations (an ordered map per object, a string per key) several times the size of its
//! text. Schemas are read rarely: when a tool is described, when its arguments are first
//! validated, when the search index is built. So the catalog keeps each one as the text
//! `serde_json` writes for it, behind an `Arc` that the upstream tool list and every catalog built
//! from it share, and parses it for the moment it is read.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

/// How deeply a schema may nest (objects and arrays inside each other). The text is parsed again
/// whenever it is read, and `serde_json` parses at most 128 levels; an upstream server's message
/// nests at most 100 levels in all, so no schema it sends comes near.
pub const MAX_SCHEMA_DEPTH: usize = 120;

/// A JSON Schema (an object), kept as compact JSON text. Cloning shares the text.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ToolSchema(Arc<str>);

/// A schema nested more deeply than [`MAX_SCHEMA_DEPTH`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaTooDeep;

impl fmt::Display for SchemaTooDeep {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "the schema nests more than {MAX_SCHEMA_DEPTH} levels of objects and arrays"
        )
    }
}

impl std::error::Error for SchemaTooDeep {}

impl ToolSchema {
    /// The schema of `object`, unless it nests more deeply than [`MAX_SCHEMA_DEPTH`].
    pub fn from_object(object: &Map<String, Value>) -> Result<Self, SchemaTooDeep> {
        if object.values().any(|value| too_deep(value, 2)) {
            return Err(SchemaTooDeep);
        }
        // Writing a map of JSON values cannot fail: its keys are strings.
        let text = serde_json::to_string(object).unwrap_or_else(|_| String::from("{}"));
        Ok(Self(text.into()))
    }

    /// The schema `value` (an object, or `true`/`false`, or anything an upstream sent), unless
    /// it nests more deeply than [`MAX_SCHEMA_DEPTH`].
    pub fn from_value(value: &Value) -> Result<Self, SchemaTooDeep> {
        if too_deep(value, 1) {
            return Err(SchemaTooDeep);
        }
        Ok(Self(value.to_string().into()))
    }

    /// The schema, parsed.
    pub fn value(&self) -> Value {
        // The text was written by serde_json from a value nesting at most MAX_SCHEMA_DEPTH
        // levels, within serde_json's parsing limit, so it always parses; should that ever fail,
        // an empty schema (anything goes) is what the upstream server then checks for itself.
        serde_json::from_str(&self.0).unwrap_or_else(|_| Value::Object(Map::new()))
    }

    /// The schema as compact JSON text.
    pub fn as_json(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ToolSchema {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// Whether `value`, at nesting level `depth`, reaches deeper than [`MAX_SCHEMA_DEPTH`]. Stops
/// at the limit, so an arbitrarily deep value costs no deeper recursion than that.
fn too_deep(value: &Value, depth: usize) -> bool {
    match value {
        Value::Array(items) => {
            depth > MAX_SCHEMA_DEPTH || items.iter().any(|item| too_deep(item, depth + 1))
        }
        Value::Object(members) => {
            depth > MAX_SCHEMA_DEPTH || members.values().any(|member| too_deep(member, depth + 1))
        }
        _ => false,
    }
}

/// A tool's MCP annotations: hints about what calling it does. Untrusted, as the server says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Annotations {
    /// Human-readable title.
    pub title: Option<String>,
    /// `readOnlyHint`: it does not change its environment.
    pub read_only: Option<bool>,
    /// `destructiveHint`: it may destroy or overwrite something (meaningful when not read-only).
    pub destructive: Option<bool>,
    /// `idempotentHint`: calling it again with the same arguments changes nothing more.
    pub idempotent: Option<bool>,
    /// `openWorldHint`: it reaches beyond a closed set of things (the web, other people).
    pub open_world: Option<bool>,
}

impl Annotations {
    /// The annotations as MCP writes them (the hints that are set only).
    pub fn to_value(&self) -> Value {
        let mut object = Map::new();
        if let Some(title) = &self.title {
            object.insert("title".to_owned(), Value::String(title.clone()));
        }
        for (key, hint) in [
            ("readOnlyHint", self.read_only),
            ("destructiveHint", self.destructive),
            ("idempotentHint", self.idempotent),
            ("openWorldHint", self.open_world),
        ] {
            if let Some(hint) = hint {
                object.insert(key.to_owned(), Value::Bool(hint));
            }
        }
        Value::Object(object)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keeps_the_schema_and_its_order() {
        let value = json!({"type": "object", "properties": {"z": {"type": "string"}, "a": {}}});
        let schema = ToolSchema::from_value(&value).unwrap();
        assert_eq!(schema.value(), value);
        assert_eq!(
            schema.as_json(),
            r#"{"type":"object","properties":{"z":{"type":"string"},"a":{}}}"#
        );
        let object = value.as_object().unwrap();
        assert_eq!(ToolSchema::from_object(object).unwrap(), schema);
    }

    #[test]
    fn annotations_are_written_as_mcp_names_them() {
        let annotations = Annotations {
            destructive: Some(true),
            read_only: Some(false),
            ..Annotations::default()
        };
        assert_eq!(
            annotations.to_value(),
            json!({"readOnlyHint": false, "destructiveHint": true})
        );
    }

    #[test]
    fn refuses_what_could_not_be_read_back() {
        let mut deep = json!({});
        for _ in 1..MAX_SCHEMA_DEPTH {
            deep = json!({ "items": deep });
        }
        assert!(ToolSchema::from_value(&deep).is_ok());
        assert!(ToolSchema::from_value(&deep).unwrap().value() == deep);
        let deeper = json!({ "items": deep });
        assert_eq!(ToolSchema::from_value(&deeper), Err(SchemaTooDeep));
        assert_eq!(
            ToolSchema::from_object(deeper.as_object().unwrap()),
            Err(SchemaTooDeep)
        );
    }
}
