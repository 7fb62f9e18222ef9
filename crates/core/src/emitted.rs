//! The content blocks of one execution's answer, after its text: those code adds with
//! `emit(block)`, and the image and audio blocks of the value it returns (`return
//! shot.content[0]`, a tool result's content array, a raw tool result). Each is checked here
//! (its type, base64 that decodes, a media type of its kind) and counted against
//! `--max-emitted-blocks` and `--max-emitted-bytes`; the one that passes a limit is refused with
//! an error naming the flag, never left out without a word.

use base64::Engine as _;
use rmcp::model::ContentBlock;
use serde_json::{Map, Value};

use crate::error::BlockError;
use toolweave_config::{Limits, json_kind};

/// The fields each kind of block may have; anything else is refused rather than dropped.
const MEDIA_FIELDS: [&str; 5] = ["type", "data", "mimeType", "annotations", "_meta"];
const TEXT_FIELDS: [&str; 4] = ["type", "text", "annotations", "_meta"];

/// The blocks one execution has added to its answer, and what they came to.
#[derive(Debug)]
pub(crate) struct Emitted {
    blocks: Vec<ContentBlock>,
    bytes: usize,
    max_blocks: usize,
    max_bytes: usize,
}

impl Emitted {
    /// No blocks yet, under the gateway's `limits`.
    pub(crate) fn new(limits: &Limits) -> Self {
        Self {
            blocks: Vec::new(),
            bytes: 0,
            max_blocks: limits.max_emitted_blocks,
            max_bytes: limits.max_emitted_bytes,
        }
    }

    /// `emit(block)`: the block, checked and counted, goes in the answer.
    pub(crate) fn emit(&mut self, block: Value) -> Result<(), BlockError> {
        self.add(block, "emit(block)".to_owned())
    }

    /// The program's `value`, its image and audio blocks taken into the answer and each
    /// replaced with what it was (`{type, mimeType, bytes}`): a block returned alone, the
    /// blocks of an array of content blocks, or of a tool result's `content`.
    pub(crate) fn take_returned(&mut self, value: Value) -> Result<Value, BlockError> {
        match value {
            Value::Object(object) if is_media(&object) => {
                self.take_media(object, "the returned block".to_owned())
            }
            Value::Array(items) if is_content(&items) => {
                self.take_all(items, "the returned array").map(Value::Array)
            }
            Value::Object(mut object) => {
                let content = match object.remove("content") {
                    Some(Value::Array(items)) if is_content(&items) => {
                        Value::Array(self.take_all(items, "content of the returned result")?)
                    }
                    Some(other) => other,
                    None => return Ok(Value::Object(object)),
                };
                object.insert("content".to_owned(), content);
                Ok(Value::Object(object))
            }
            value => Ok(value),
        }
    }

    /// The blocks, in the order they were added, taken out (the execution's answer has them).
    pub(crate) fn take_blocks(&mut self) -> Vec<ContentBlock> {
        std::mem::take(&mut self.blocks)
    }

    fn take_all(&mut self, items: Vec<Value>, whose: &str) -> Result<Vec<Value>, BlockError> {
        items
            .into_iter()
            .enumerate()
            .map(|(index, item)| match item {
                Value::Object(object) if is_media(&object) => {
                    self.take_media(object, format!("item {index} of {whose}"))
                }
                other => Ok(other),
            })
            .collect()
    }

    fn take_media(
        &mut self,
        object: Map<String, Value>,
        source: String,
    ) -> Result<Value, BlockError> {
        let described = serde_json::json!({
            "type": object.get("type"),
            "mimeType": object.get("mimeType"),
            "bytes": object
                .get("data")
                .and_then(Value::as_str)
                .map_or(0, decoded_len),
        });
        self.add(Value::Object(object), source)?;
        Ok(described)
    }

    fn add(&mut self, block: Value, source: String) -> Result<(), BlockError> {
        let (block, size) = checked(block, &source)?;
        if self.blocks.len() >= self.max_blocks {
            return Err(BlockError::TooMany {
                what: source,
                limit: self.max_blocks,
            });
        }
        let total = self.bytes.saturating_add(size);
        if total > self.max_bytes {
            return Err(BlockError::TooManyBytes {
                what: source,
                size,
                total,
                limit: self.max_bytes,
            });
        }
        self.bytes = total;
        self.blocks.push(block);
        Ok(())
    }
}

/// Whether `object` is an image or audio block as code would return one.
fn is_media(object: &Map<String, Value>) -> bool {
    matches!(
        object.get("type").and_then(Value::as_str),
        Some("image" | "audio")
    ) && object.get("data").is_some_and(Value::is_string)
}

/// Whether `items` is a content array (every item a block of an MCP type) with media in it.
fn is_content(items: &[Value]) -> bool {
    let kind = |item: &Value| item.get("type").and_then(Value::as_str).map(str::to_owned);
    items.iter().all(|item| {
        matches!(
            kind(item).as_deref(),
            Some("text" | "image" | "audio" | "resource_link" | "resource")
        )
    }) && items
        .iter()
        .any(|item| item.as_object().is_some_and(is_media))
}

/// The block as the answer carries it, and its bytes (base64 data, text, or JSON), or what is
/// wrong with it.
fn checked(block: Value, source: &str) -> Result<(ContentBlock, usize), BlockError> {
    let invalid = |problem: String| BlockError::Invalid {
        what: source.to_owned(),
        problem,
    };
    let Value::Object(object) = &block else {
        return Err(invalid(format!(
            "a block is an object, not {}",
            json_kind(&block)
        )));
    };
    let kind = match object.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        None => return Err(invalid("the block has no \"type\"".to_owned())),
        Some(other) => return Err(invalid(format!("\"type\" must be a string, not {other}"))),
    };
    let size = match kind.as_str() {
        "image" | "audio" => media_size(object, &kind).map_err(invalid)?,
        "text" => {
            only_fields(object, &TEXT_FIELDS).map_err(invalid)?;
            match object.get("text") {
                Some(Value::String(text)) => text.len(),
                _ => return Err(invalid("a text block needs \"text\", a string".to_owned())),
            }
        }
        "resource_link" => crate::json_size::json_len(&block),
        other => {
            return Err(invalid(format!(
                "toolweave does not pass on blocks of type \"{other}\""
            )));
        }
    };
    let block = serde_json::from_value::<ContentBlock>(block)
        .map_err(|error| invalid(format!("it is not a valid {kind} block: {error}")))?;
    Ok((block, size))
}

/// The bytes of an image or audio block's data, once its fields are found sound.
fn media_size(object: &Map<String, Value>, kind: &str) -> Result<usize, String> {
    only_fields(object, &MEDIA_FIELDS)?;
    let Some(Value::String(data)) = object.get("data") else {
        return Err(format!(
            "an {kind} block needs \"data\", its bytes in base64"
        ));
    };
    let mime_type = match object.get("mimeType") {
        Some(Value::String(mime_type)) => mime_type,
        _ => {
            return Err(format!(
                "an {kind} block needs \"mimeType\", such as \"{}\"",
                if kind == "image" {
                    "image/png"
                } else {
                    "audio/wav"
                }
            ));
        }
    };
    let prefix = format!("{kind}/");
    if !mime_type.starts_with(&prefix) || mime_type.len() == prefix.len() {
        return Err(format!(
            "the mimeType of an {kind} block begins with \"{prefix}\", and this one is \"{mime_type}\""
        ));
    }
    if let Err(error) = base64::engine::general_purpose::STANDARD.decode(data) {
        return Err(format!(
            "\"data\" is not base64 ({error}); encode the bytes with the standard alphabet and padding"
        ));
    }
    Ok(data.len())
}

/// How many bytes base64 `data` with padding stands for.
fn decoded_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|&byte| byte == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

fn only_fields(object: &Map<String, Value>, allowed: &[&str]) -> Result<(), String> {
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(format!(
            "the block has a field \"{key}\" toolweave does not pass on; its fields are {}",
            allowed.join(", ")
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn emitted(max_blocks: usize, max_bytes: usize) -> Emitted {
        Emitted::new(&Limits {
            max_emitted_blocks: max_blocks,
            max_emitted_bytes: max_bytes,
            ..Limits::default()
        })
    }

    #[test]
    fn blocks_are_checked_and_counted() {
        let mut blocks = emitted(2, 12);
        blocks
            .emit(json!({"type": "image", "data": "iVBORw==", "mimeType": "image/png"}))
            .unwrap();
        let bytes = blocks
            .emit(json!({"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}))
            .unwrap_err();
        assert!(matches!(
            bytes,
            BlockError::TooManyBytes {
                size: 8,
                total: 16,
                limit: 12,
                ..
            }
        ));
        blocks.emit(json!({"type": "text", "text": "hi"})).unwrap();
        let many = blocks
            .emit(json!({"type": "text", "text": "x"}))
            .unwrap_err();
        assert!(
            many.to_string().contains("--max-emitted-blocks 2"),
            "{many}"
        );
        assert_eq!(blocks.take_blocks().len(), 2);
    }

    #[test]
    fn bad_blocks_say_what_is_wrong() {
        let mut blocks = emitted(8, 1 << 20);
        let cases = [
            (
                json!({"type": "image", "data": "not base64!", "mimeType": "image/png"}),
                "not base64",
            ),
            (
                json!({"type": "image", "data": "iVBORw=="}),
                "needs \"mimeType\"",
            ),
            (
                json!({"type": "audio", "data": "UklGRg==", "mimeType": "image/png"}),
                "begins with \"audio/\"",
            ),
            (json!({"type": "video", "data": ""}), "type \"video\""),
            (
                json!({"type": "image", "data": "", "mimeType": "image/png", "alt": "x"}),
                "field \"alt\"",
            ),
            (json!("picture"), "not a string"),
        ];
        for (block, expected) in cases {
            let error = blocks.emit(block).unwrap_err().to_string();
            assert!(error.contains(expected), "{error} lacks {expected}");
        }
    }

    #[test]
    fn returned_media_goes_in_the_answer_and_is_described_in_the_value() {
        let mut blocks = emitted(8, 1 << 20);
        let image = json!({"type": "image", "data": "iVBORw==", "mimeType": "image/png"});
        assert_eq!(
            blocks.take_returned(image.clone()).unwrap(),
            json!({"type": "image", "mimeType": "image/png", "bytes": 4})
        );
        let content = json!([{"type": "text", "text": "a shot"}, image]);
        assert_eq!(
            blocks
                .take_returned(json!({"content": content, "isError": false}))
                .unwrap(),
            json!({"content": [{"type": "text", "text": "a shot"}, {"type": "image", "mimeType": "image/png", "bytes": 4}], "isError": false})
        );
        // Data that only looks like a block stays data.
        let plain = json!([{"type": "image"}, {"name": "x"}]);
        assert_eq!(blocks.take_returned(plain.clone()).unwrap(), plain);
        assert_eq!(blocks.take_blocks().len(), 2);
    }
}
