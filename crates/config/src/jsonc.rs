//! Reading the JSON files MCP clients write. Most are strict JSON; VS Code's `mcp.json` is JSON
//! with comments and trailing commas (JSONC). Strict JSON is tried first, so its errors keep
//! serde_json's line and column; text that only JSONC accepts is read as JSONC.

use serde_json::Value;

/// How a file's text was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// Plain JSON.
    Json,
    /// JSON with comments or trailing commas, which a rewrite through serde_json would lose.
    Jsonc,
}

/// Parses `text` as JSON, or else as JSONC (comments, trailing commas, nothing looser). `Err`
/// is the strict parser's message, with line and column.
pub(crate) fn parse(text: &str) -> Result<(Value, Dialect), String> {
    match serde_json::from_str(text) {
        Ok(value) => Ok((value, Dialect::Json)),
        Err(strict) => {
            let options = jsonc_parser::ParseOptions {
                allow_comments: true,
                allow_trailing_commas: true,
                allow_loose_object_property_names: false,
                allow_missing_commas: false,
                allow_single_quoted_strings: false,
                allow_hexadecimal_numbers: false,
                allow_unary_plus_numbers: false,
                allow_bare_decimal_point_numbers: false,
                allow_non_finite_numbers: false,
                allow_extended_string_escapes: false,
            };
            match jsonc_parser::parse_to_serde_value::<Option<Value>>(text, &options) {
                Ok(Some(value)) => Ok((value, Dialect::Jsonc)),
                _ => Err(format!(
                    "not valid JSON at line {}, column {}: {strict}",
                    strict.line(),
                    strict.column()
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn comments_and_trailing_commas_are_read_and_nothing_looser() {
        let (value, dialect) = parse(r#"{"a": [1, 2]}"#).unwrap();
        assert_eq!((value, dialect), (json!({ "a": [1, 2] }), Dialect::Json));
        let text =
            "{\n  // the servers\n  \"servers\": { /* one */ \"x\": {\"command\": \"y\",}, },\n}";
        let (value, dialect) = parse(text).unwrap();
        assert_eq!(dialect, Dialect::Jsonc);
        assert_eq!(value, json!({ "servers": { "x": { "command": "y" } } }));
        let error = parse("{'a': 1}").unwrap_err();
        assert!(
            error.starts_with("not valid JSON at line 1, column 2"),
            "{error}"
        );
    }
}
