//! How large a value is as JSON, counted without writing it, and whether a message is large
//! enough to be written and read off the async runtime. Budgets, the session store, the worker
//! and runner links and the gateway's pages all measure with these.

/// The length of `value` written as JSON, counted without building the text.
pub(crate) fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail; a value that cannot be written counts what was written.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// [`json_len`] of a JSON value, with each string's escapes counted 64 bytes at a time (a block
/// without a quote, backslash or control character, nearly every one, costs a few
/// instructions): a result of tens of megabytes is counted in milliseconds, where writing it
/// through serde_json, even to a counter, takes tens.
pub(crate) fn value_json_len(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    match value {
        Value::String(text) => string_json_len(text),
        Value::Array(items) => {
            2 + items.len().saturating_sub(1) + items.iter().map(value_json_len).sum::<usize>()
        }
        Value::Object(map) => {
            2 + map.len().saturating_sub(1)
                + map
                    .iter()
                    .map(|(key, value)| string_json_len(key) + 1 + value_json_len(value))
                    .sum::<usize>()
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => json_len(value),
    }
}

/// [`json_len`] of a tool result's content blocks: a text block's text counted as
/// [`value_json_len`] counts strings, the rest as written.
pub(crate) fn content_json_len(content: &[rmcp::model::ContentBlock]) -> usize {
    use rmcp::model::{ContentBlock, TextContent};
    let blocks: usize = content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => {
                // The block written with an empty text (two bytes), and the text on its own.
                let mut hollow = TextContent::new(String::new());
                hollow.meta.clone_from(&text.meta);
                hollow.annotations.clone_from(&text.annotations);
                json_len(&ContentBlock::Text(hollow)).saturating_sub(2)
                    + string_json_len(&text.text)
            }
            other => json_len(other),
        })
        .sum();
    2 + content.len().saturating_sub(1) + blocks
}

/// The length of `text` as a JSON string, quotes included, escaped as serde_json escapes it:
/// `\"`, `\\` and the five short escapes take two bytes, other control characters six.
pub(crate) fn string_json_len(text: &str) -> usize {
    const BLOCK: usize = 64;
    let extra = |byte: u8| -> usize {
        match byte {
            b'"' | b'\\' | 0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 1,
            0x00..=0x1f => 5,
            _ => 0,
        }
    };
    let bytes = text.as_bytes();
    let mut blocks = bytes.chunks_exact(BLOCK);
    let mut escapes = 0;
    for block in &mut blocks {
        let any = block.iter().fold(false, |any, &byte| {
            any | (byte < 0x20) | (byte == b'"') | (byte == b'\\')
        });
        if any {
            escapes += block.iter().map(|&byte| extra(byte)).sum::<usize>();
        }
    }
    escapes += blocks
        .remainder()
        .iter()
        .map(|&byte| extra(byte))
        .sum::<usize>();
    bytes.len() + 2 + escapes
}

/// A message at least this large (as JSON) is written and read off the async runtime, where tens
/// of megabytes would hold up every other execution.
pub(crate) const LARGE_JSON_BYTES: usize = 1024 * 1024;

/// Whether `value` takes at least `bytes` as JSON: its strings' lengths and a byte a node,
/// counted until they reach `bytes`, so a look at a large value stops early.
pub(crate) fn at_least(value: &serde_json::Value, bytes: usize) -> bool {
    let mut left = bytes;
    reaches(value, &mut left)
}

/// Takes what `value` adds from `left`; whether nothing is left.
fn reaches(value: &serde_json::Value, left: &mut usize) -> bool {
    use serde_json::Value;
    let own = match value {
        Value::String(text) => text.len(),
        Value::Array(items) => {
            for item in items {
                if reaches(item, left) {
                    return true;
                }
            }
            items.len()
        }
        Value::Object(map) => {
            for (key, item) in map {
                *left = left.saturating_sub(key.len());
                if reaches(item, left) {
                    return true;
                }
            }
            map.len()
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => 1,
    };
    *left = left.saturating_sub(own);
    *left == 0
}

/// Whether `reply` is a large one: [`LARGE_JSON_BYTES`] or more as JSON.
pub(crate) fn is_large_reply(reply: &toolweave_sandbox::HostReply) -> bool {
    match reply {
        toolweave_sandbox::HostReply::Result { outcome, .. } => match outcome {
            Ok(value) => at_least(value, LARGE_JSON_BYTES),
            Err(message) => message.len() >= LARGE_JSON_BYTES,
        },
        toolweave_sandbox::HostReply::Cancel => false,
    }
}

/// Whether `message` (a worker's or runner's) is a large one: [`LARGE_JSON_BYTES`] or more as
/// JSON, by its value, a call's arguments or a log line.
pub(crate) fn is_large_message(message: &toolweave_process::FromEngine) -> bool {
    use toolweave_process::FromEngine;
    use toolweave_sandbox::{EngineEvent, HostRequest, SessionAsk};
    match message {
        FromEngine::Finished(outcome) => outcome
            .result
            .as_ref()
            .is_ok_and(|value| at_least(value, LARGE_JSON_BYTES)),
        FromEngine::Event(EngineEvent::Call(call)) => match &call.request {
            HostRequest::Tool { args: value, .. }
            | HostRequest::Emit { block: value }
            | HostRequest::Session(
                SessionAsk::StoreSet { value, .. } | SessionAsk::Keep { value },
            ) => at_least(value, LARGE_JSON_BYTES),
            // Names and queries: small, unless code sent many; counted without writing them.
            other => json_len(other) >= LARGE_JSON_BYTES,
        },
        FromEngine::Event(EngineEvent::Log { text, .. } | EngineEvent::Warning { text }) => {
            text.len() >= LARGE_JSON_BYTES
        }
        FromEngine::Event(EngineEvent::Started | EngineEvent::Progress(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_at_least_as_large_as_its_strings_and_nodes_and_never_its_json() {
        use serde_json::json;
        assert!(at_least(&json!("x".repeat(10)), 10));
        assert!(!at_least(&json!("x".repeat(9)), 10));
        // Two numbers, four bytes of string, a null, and four and one items.
        assert!(at_least(&json!([1, 2, "abcd", [null]]), 12));
        assert!(!at_least(&json!([1, 2, "abcd", [null]]), 13));
        assert!(at_least(&json!({ "key": { "k": true } }), 7));
        assert!(!at_least(&json!({ "key": { "k": true } }), 8));
        for value in [
            json!("x".repeat(100)),
            json!([[1, 2], { "a": "b" }, null, "é\n"]),
            json!({ "key": { "k": [true, false] } }),
        ] {
            let length = json_len(&value);
            assert!(!at_least(&value, length + 1), "{value}");
        }
    }

    #[test]
    fn json_len_is_the_length_of_the_text() {
        let value = serde_json::json!({ "a": [1, "two", null], "b": "é" });
        assert_eq!(json_len(&value), value.to_string().len());
    }

    #[test]
    fn values_and_content_are_counted_as_serde_json_writes_them() {
        use rmcp::model::{ContentBlock, TextContent};
        use serde_json::json;
        // Every byte that needs an escape, in and out of whole 64-byte blocks.
        let controls: String = (0u8..0x20).map(char::from).collect();
        let mixed = format!("{controls}\"\\é€😀\u{7f}");
        let long = format!("{}{mixed}{}", "x".repeat(100), "y".repeat(63));
        let values = [
            json!(null),
            json!(true),
            json!(-12.5e-3),
            json!(u64::MAX),
            json!(""),
            json!(mixed),
            json!(long),
            json!("z".repeat(64 * 3)),
            json!([]),
            json!({}),
            json!([1, [2, [3, {}]], { "k\n": "v\"", "": [null, false] }]),
            json!({ (mixed.clone()): { "a": long.clone() }, "b": [mixed.clone(), 1.5] }),
        ];
        for value in &values {
            assert_eq!(value_json_len(value), value.to_string().len(), "{value}");
        }
        let mut annotated = TextContent::new(long.clone());
        annotated.meta =
            Some(serde_json::from_value(json!({ "trace": "t\u{1}" })).expect("a meta object"));
        let content = [
            ContentBlock::text(mixed),
            ContentBlock::Text(annotated),
            ContentBlock::image("aGVsbG8=", "image/png"),
            ContentBlock::text(""),
        ];
        for blocks in [&content[..], &content[..1], &[]] {
            assert_eq!(
                content_json_len(blocks),
                serde_json::to_string(blocks).expect("content").len()
            );
        }
    }
}
