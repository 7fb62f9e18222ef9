//! The id of a request that cannot be decoded, read from its text, so that the error still
//! reaches the request it answers.
//!
//! A message too long to keep, or one that is not valid JSON, still names its id somewhere: at
//! its start (`{"jsonrpc":"2.0","id":7,...`, as most clients write it) or at its end (the
//! TypeScript SDK writes `{"method":...,"params":...,"jsonrpc":"2.0","id":7}`). [`IdScanner`]
//! reads the text as it goes by, keeping only the value of the top-level object's `"id"`
//! member, so a line of any length costs it a few hundred bytes.

use serde_json::Value;

/// The longest id text kept; an id longer than this is not recovered.
const MAX_ID_BYTES: usize = 1024;

/// The id of `text`'s top-level object, when it has one that is a string or a number.
pub(crate) fn find(text: &[u8]) -> Option<Value> {
    let mut scanner = IdScanner::default();
    scanner.feed(text);
    scanner.id()
}

/// Where the scanner is in the top-level object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Place {
    /// Before the object's `{`.
    #[default]
    Start,
    /// Where a member's name comes.
    Name,
    /// After a name, before its `:`.
    Colon,
    /// After the `:`, where the value comes or is being read.
    Value,
    /// Nothing more to learn: the id was read, or cannot be.
    Done,
}

/// Reads JSON text in pieces and keeps the top-level object's `"id"` value (see the module).
/// Lenient: text that is not JSON gives no id or the id its first `"id"` member names.
#[derive(Debug, Default)]
pub(crate) struct IdScanner {
    place: Place,
    /// Containers open: 1 inside the top-level object.
    depth: usize,
    in_string: bool,
    /// The previous byte in a string was a backslash.
    escaped: bool,
    /// The member name being read (at depth 1), while it may still be `id`.
    name: Option<Vec<u8>>,
    /// The last member name read was `id`.
    name_is_id: bool,
    /// The id's text while it is read.
    value: Option<Vec<u8>>,
    /// The id's text, once read.
    found: Option<Vec<u8>>,
}

impl IdScanner {
    /// Reads the next piece of the text.
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() && self.place != Place::Done {
            if self.in_string {
                bytes = self.string_piece(bytes);
                continue;
            }
            self.step(bytes[0]);
            bytes = &bytes[1..];
        }
    }

    /// The id read, when it is a string or a number.
    pub(crate) fn id(&self) -> Option<Value> {
        let text = self.found.as_deref()?;
        match serde_json::from_slice(text).ok()? {
            id @ (Value::String(_) | Value::Number(_)) => Some(id),
            _ => None,
        }
    }

    /// Reads string bytes up to the next quote or backslash; what is left of `bytes`.
    fn string_piece<'a>(&mut self, bytes: &'a [u8]) -> &'a [u8] {
        if self.escaped {
            self.escaped = false;
            self.keep(&bytes[..1]);
            return &bytes[1..];
        }
        let Some(stop) = memchr::memchr2(b'"', b'\\', bytes) else {
            self.keep(bytes);
            return &[];
        };
        self.keep(&bytes[..=stop]);
        if bytes[stop] == b'\\' {
            self.escaped = true;
            // A name written with escapes is not taken for `id`.
            self.name = None;
        } else {
            self.in_string = false;
            self.end_string();
        }
        &bytes[stop + 1..]
    }

    /// One byte outside strings.
    fn step(&mut self, byte: u8) {
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 {
                    match self.place {
                        Place::Name => self.name = Some(Vec::new()),
                        Place::Value if self.name_is_id => self.value = Some(vec![b'"']),
                        _ => {}
                    }
                } else if self.depth == 0 {
                    self.place = Place::Done;
                }
            }
            b'{' | b'[' => {
                if self.depth == 0 {
                    // Only an object has an id.
                    self.place = if byte == b'{' {
                        Place::Name
                    } else {
                        Place::Done
                    };
                } else if self.depth == 1 && self.place == Place::Value && self.name_is_id {
                    // An object or array is no id.
                    self.place = Place::Done;
                }
                self.depth += 1;
            }
            b'}' | b']' => {
                self.end_scalar();
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    self.place = Place::Done;
                }
            }
            b':' if self.depth == 1 && self.place == Place::Colon => self.place = Place::Value,
            b',' if self.depth == 1 => {
                self.end_scalar();
                self.place = Place::Name;
                self.name_is_id = false;
            }
            b' ' | b'\t' | b'\r' | b'\n' => self.end_scalar(),
            _ => {
                if self.depth == 1 && self.place == Place::Value && self.name_is_id {
                    self.value.get_or_insert_with(Vec::new);
                    self.keep(&[byte]);
                }
            }
        }
    }

    /// Keeps string or number bytes that belong to the name or the id being read.
    fn keep(&mut self, bytes: &[u8]) {
        if let Some(name) = &mut self.name {
            name.extend_from_slice(bytes);
            if name.len() > b"id\"".len() {
                self.name = None;
            }
        }
        if let Some(value) = &mut self.value {
            if value.len() + bytes.len() > MAX_ID_BYTES {
                self.value = None;
                self.place = Place::Done;
            } else {
                value.extend_from_slice(bytes);
            }
        }
    }

    fn end_string(&mut self) {
        if self.depth != 1 {
            return;
        }
        match self.place {
            Place::Name => {
                self.name_is_id = self.name.take().as_deref() == Some(b"id\"");
                self.place = Place::Colon;
            }
            Place::Value => self.end_value(),
            _ => {}
        }
    }

    fn end_scalar(&mut self) {
        if self.value.is_some() && !self.in_string {
            self.end_value();
        }
    }

    fn end_value(&mut self) {
        if let Some(value) = self.value.take() {
            self.found = Some(value);
            self.place = Place::Done;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn finds_the_id_wherever_it_is() {
        for (text, id) in [
            (r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#, json!(7)),
            (
                r#"{"method":"x","params":{"id":1},"jsonrpc":"2.0","id":8}"#,
                json!(8),
            ),
            (r#" { "id" : "abc" , "method":"x"}"#, json!("abc")),
            (r#"{"id":"a\"b\\","method":"x"}"#, json!("a\"b\\")),
            (r#"{"id":-3}"#, json!(-3)),
            (r#"{"id":1.5,"x":1}"#, json!(1.5)),
            (r#"{"params":["id",{"id":2}],"id":3}"#, json!(3)),
            (r#"{"params":"\"id\":4","id":5}"#, json!(5)),
            // Cut short after the id: still found.
            (r#"{"jsonrpc":"2.0","id":17,"method":"ping""#, json!(17)),
            (r#"{"id":"x","params":{"code":"unterminated"#, json!("x")),
        ] {
            assert_eq!(find(text.as_bytes()), Some(id), "{text}");
        }
    }

    #[test]
    fn no_id_when_there_is_none_to_trust() {
        for text in [
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"id":null,"method":"x"}"#,
            r#"{"id":true}"#,
            r#"{"id":{"a":1}}"#,
            r#"{"id":[1]}"#,
            r#"[{"id":1}]"#,
            r#""id""#,
            r#"{"i\u0064":1}"#,
            r#"{"idx":1}"#,
            // Cut inside the id: it might be longer.
            r#"{"id":17"#,
            r#"{"id":"ab"#,
            "not json",
            "",
        ] {
            assert_eq!(find(text.as_bytes()), None, "{text}");
        }
        let long = format!(r#"{{"id":"{}"}}"#, "x".repeat(MAX_ID_BYTES));
        assert_eq!(find(long.as_bytes()), None);
    }

    /// Fed in pieces of any size, the text gives the same id.
    #[test]
    fn pieces_change_nothing() {
        let text = r#"{"method":"tools/call","params":{"name":"x","arguments":{"s":"a\"}\\"}},"jsonrpc":"2.0","id":"req-1"}"#;
        for size in 1..text.len() {
            let mut scanner = IdScanner::default();
            for piece in text.as_bytes().chunks(size) {
                scanner.feed(piece);
            }
            assert_eq!(scanner.id(), Some(json!("req-1")), "pieces of {size}");
        }
    }
}
