//! A tool's text result as code receives it: the string the server sent, unless the text is a
//! JSON object or array, which code receives as that value with every number exactly as sent.
//!
//! Code reads numbers as doubles (JavaScript numbers; Python receives what JavaScript would, so a
//! program means the same in both). A number in the text that no double holds exactly (an
//! integer beyond 2^53, a decimal with more digits than a double keeps) would reach code rounded,
//! silently; it reaches code as a string of its text instead, and the execution's answer says
//! where. A text that is anything else (`"1.10"`, `"-0"`, `"1e3"`, `"null"`, `"\"quoted\""`) is
//! what the server said, and reaches code as that string.

use serde_json::Value;

/// What the model reads of the rule, in the `execute_code` description and describe answers.
pub const TEXT_RESULT_RULE: &str =
    "Text results arrive as sent (a JSON object or array parsed, inexact numbers as strings).";

/// How many of the numbers kept as text a warning names.
const MAX_NAMED_NUMBERS: usize = 3;
/// How much of one number's text, and of its path, a warning shows.
const MAX_SHOWN_BYTES: usize = 48;

/// A number of a JSON text that no double holds exactly, kept as a string of its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeptAsText {
    /// Where it is, as a JSON Pointer (`/items/0/id`).
    pub(crate) path: String,
    /// The number, as the server wrote it.
    pub(crate) text: String,
}

/// The value code receives for a tool's text, and the numbers in it kept as text.
pub(crate) fn text_value(text: String) -> (Value, Vec<KeptAsText>) {
    let structured = matches!(text.trim_start().as_bytes().first(), Some(b'{' | b'['));
    if !structured {
        return (Value::String(text), Vec::new());
    }
    let Ok(mut value) = serde_json::from_str::<Value>(&text) else {
        return (Value::String(text), Vec::new());
    };
    let kept = inexact_numbers(&text);
    for number in &kept {
        if let Some(slot) = value.pointer_mut(&number.path)
            && slot.is_number()
        {
            *slot = Value::String(number.text.clone());
        }
    }
    (value, kept)
}

/// The warning for `tool`'s numbers kept as text: how many, the first few with their paths.
pub(crate) fn kept_as_text_warning(tool: &str, kept: &[KeptAsText]) -> String {
    let shown: Vec<String> = kept
        .iter()
        .take(MAX_NAMED_NUMBERS)
        .map(|number| {
            let path = if number.path.is_empty() {
                "/"
            } else {
                &number.path
            };
            format!(
                "{} ({})",
                crate::error::cut(path.to_owned(), MAX_SHOWN_BYTES),
                crate::error::cut(number.text.clone(), MAX_SHOWN_BYTES)
            )
        })
        .collect();
    let mut listed = shown.join(", ");
    if kept.len() > MAX_NAMED_NUMBERS {
        listed.push_str(&format!(" and {} more", kept.len() - MAX_NAMED_NUMBERS));
    }
    let (count, received) = match kept.len() {
        1 => ("1 number".to_owned(), "it as a string of its digits"),
        many => (format!("{many} numbers"), "them as strings of their digits"),
    };
    format!(
        "{tool} answered JSON with {count} that a double cannot hold exactly; code received \
         {received}: {listed}"
    )
}

/// One level of the JSON text being scanned.
enum Frame {
    /// An object: the span of the key of the member being read, and whether a key comes next.
    Object {
        key: Option<(usize, usize)>,
        expecting_key: bool,
    },
    /// An array: the index of the item being read.
    Array { index: usize },
}

/// Every number of `text` (valid JSON) that no double holds exactly, with its path.
fn inexact_numbers(text: &str) -> Vec<KeptAsText> {
    let bytes = text.as_bytes();
    let mut frames: Vec<Frame> = Vec::new();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                let start = at;
                at += 1;
                while at < bytes.len() && bytes[at] != b'"' {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
                if let Some(Frame::Object { key, expecting_key }) = frames.last_mut()
                    && *expecting_key
                {
                    *key = Some((start, at + 1));
                    *expecting_key = false;
                }
            }
            b'{' => frames.push(Frame::Object {
                key: None,
                expecting_key: true,
            }),
            b'[' => frames.push(Frame::Array { index: 0 }),
            b'}' | b']' => {
                frames.pop();
            }
            b',' => match frames.last_mut() {
                Some(Frame::Array { index }) => *index += 1,
                Some(Frame::Object { expecting_key, .. }) => *expecting_key = true,
                None => {}
            },
            b'-' | b'0'..=b'9' => {
                let start = at;
                while at + 1 < bytes.len()
                    && matches!(
                        bytes[at + 1],
                        b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'
                    )
                {
                    at += 1;
                }
                let number = &text[start..=at];
                if !exact_as_double(number) {
                    found.push(KeptAsText {
                        path: pointer(text, &frames),
                        text: number.to_owned(),
                    });
                }
            }
            // Whitespace, `:`, and the letters of `true`, `false` and `null`.
            _ => {}
        }
        at += 1;
    }
    found
}

/// The JSON Pointer of the value the scan is in.
fn pointer(text: &str, frames: &[Frame]) -> String {
    let mut path = String::new();
    for frame in frames {
        path.push('/');
        match frame {
            Frame::Array { index } => path.push_str(&index.to_string()),
            Frame::Object { key, .. } => {
                let key = key
                    .and_then(|(start, end)| serde_json::from_str::<String>(&text[start..end]).ok())
                    .unwrap_or_default();
                path.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
        }
    }
    path
}

/// Whether the double nearest to `number` (JSON number text) is the number itself: its shortest
/// decimal form has the same value.
fn exact_as_double(number: &str) -> bool {
    let Ok(double) = number.parse::<f64>() else {
        return false;
    };
    double.is_finite()
        && decimal(number).is_some_and(|exact| Some(exact) == decimal(&format!("{double:e}")))
}

/// A decimal number's value as its sign, its significant digits (no leading or trailing zeros;
/// none for zero) and where its point goes (the value is `0.DIGITS × 10^exponent`).
fn decimal(number: &str) -> Option<(bool, String, i64)> {
    let (negative, unsigned) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i64>().ok()?),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    let leading = digits.len() - digits.trim_start_matches('0').len();
    let significant = digits
        .trim_start_matches('0')
        .trim_end_matches('0')
        .to_owned();
    if significant.is_empty() {
        return Some((negative, significant, 0));
    }
    let point = i64::try_from(whole.len()).ok()? - i64::try_from(leading).ok()?;
    Some((negative, significant, point.checked_add(exponent)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn received(text: &str) -> Value {
        text_value(text.to_owned()).0
    }

    #[test]
    fn only_objects_and_arrays_are_parsed() {
        for text in [
            "1.10",
            "12345678901234567890",
            "-0",
            "1e3",
            "null",
            "\"quoted\"",
            "true",
            " 7 ",
            "{not json",
        ] {
            assert_eq!(received(text), json!(text), "{text}");
        }
        assert_eq!(
            received(" [1, 2.5, \"x\", null] "),
            json!([1, 2.5, "x", null])
        );
        assert_eq!(
            received("{\"price\": 1.10, \"n\": -0}"),
            json!({"price": 1.1, "n": -0.0})
        );
    }

    #[test]
    fn numbers_no_double_holds_are_kept_as_text() {
        let (value, kept) = text_value(
            r#"{"id": 12345678901234567890, "ok": 9007199254740992, "over": 9007199254740993,
                "pi": 3.14159265358979323846, "tiny": 1e-400, "big": 1e20, "a/b": [0.1, 2e-5, 18446744073709551616]}"#
                .to_owned(),
        );
        assert_eq!(
            value,
            json!({"id": "12345678901234567890", "ok": 9_007_199_254_740_992_u64, "over": "9007199254740993",
                   "pi": "3.14159265358979323846", "tiny": "1e-400", "big": 1e20, "a/b": [0.1, 2e-5, "18446744073709551616"]})
        );
        let paths: Vec<&str> = kept.iter().map(|number| number.path.as_str()).collect();
        assert_eq!(paths, ["/id", "/over", "/pi", "/tiny", "/a~1b/2"]);
        assert_eq!(
            kept_as_text_warning("redis.get", &kept),
            "redis.get answered JSON with 5 numbers that a double cannot hold exactly; code \
             received them as strings of their digits: /id (12345678901234567890), /over \
             (9007199254740993), /pi (3.14159265358979323846) and 2 more"
        );
        let (value, kept) =
            text_value("[[{\"k\\\"ey\": [1, 123456789012345678901234567890]}]]".to_owned());
        assert_eq!(
            value,
            json!([[{"k\"ey": [1, "123456789012345678901234567890"]}]])
        );
        assert_eq!(kept[0].path, "/0/0/k\"ey/1");
    }
}
