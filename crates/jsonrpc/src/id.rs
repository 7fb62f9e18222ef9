//! The id of a JSON-RPC message, read from its bytes without parsing them, so that an error still
//! reaches the request it answers.
//!
//! A message too long to keep, one that is not valid JSON, or one cut short still names its id
//! somewhere: at its start (`{"jsonrpc":"2.0","id":7,...`, as most peers write it) or at its end
//! (the TypeScript SDK writes `{"method":...,"params":...,"jsonrpc":"2.0","id":7}`). [`Scanner`]
//! reads the text as it goes by, in pieces of any size, and keeps only the values of the
//! top-level object's `"id"` and `"method"` members (a message with a method is a request or a
//! notification, not an answer) and how deep the text nests, so a message of any length costs it a
//! few hundred bytes. Strings are skipped with `memchr`, so long texts cost little.
//!
//! It works around rmcp, which drops a message it cannot decode and cannot say which request it
//! was (rmcp 3.11: `transport::async_rw::AsyncRwTransport::receive` logs at debug level and skips
//! a line `try_parse_with_compatibility` refuses as not JSON, answers JSON that is no message with
//! an "Invalid request" whose id is `null`, and skips a line longer than its limit after
//! `AsyncRwTransport::read_line` reports `LineRead::Oversized`): the request waits for a timeout,
//! or its sender gets an error it cannot tie to it. Callers read the id from the bytes first.
//!
//! It is lenient: text that is not JSON gives no id, or the value its first top-level `"id"`
//! member names. The first `"id"` (and `"method"`) member decides; a name written with escapes
//! (`"i\u0064"`) is not taken for one.

use serde_json::Value;

/// The longest id or method text kept; a longer one is not recovered.
pub const MAX_VALUE_BYTES: usize = 1024;

/// Where the scanner is in the top-level object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Place {
    /// Before the top-level value.
    #[default]
    Start,
    /// Where a member's name comes.
    Name,
    /// After a name, before its `:`.
    Colon,
    /// After the `:`, where the value comes or is being read.
    Value,
    /// After a value, before the `,` or `}`.
    After,
    /// Outside any object member: the top-level value is not an object, or it ended.
    Outside,
}

/// Which member's value comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Member {
    #[default]
    Other,
    Id,
    Method,
}

/// What a member's value came to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Found {
    /// Not seen yet.
    #[default]
    Unseen,
    /// Its text, once read.
    Text(Vec<u8>),
    /// Seen, but not a value to keep (an object, an array, or too long).
    Unusable,
}

impl Found {
    fn is_unseen(&self) -> bool {
        *self == Self::Unseen
    }

    fn text(&self) -> Option<&[u8]> {
        match self {
            Self::Text(text) => Some(text),
            _ => None,
        }
    }
}

/// Reads JSON text in pieces and keeps the top-level object's `"id"` and `"method"` values, and
/// how deep it nests (see the module).
#[derive(Debug, Default)]
pub struct Scanner {
    /// Stop once the id is known: nesting and the method are not wanted.
    id_only: bool,
    place: Place,
    member: Member,
    /// Containers open: 1 inside the top-level object.
    open: usize,
    /// The most containers open at once.
    deepest: usize,
    in_string: bool,
    /// The previous byte in a string was a backslash.
    escaped: bool,
    /// The member name being read (at depth 1), while it may still be `id` or `method`.
    name: Option<Vec<u8>>,
    /// The text of the id's or the method's value while it is read.
    value: Option<Vec<u8>>,
    id: Found,
    method: Found,
}

/// A scanner that has read all of `text`.
pub fn scan(text: &[u8]) -> Scanner {
    let mut scanner = Scanner::default();
    scanner.feed(text);
    scanner
}

/// The id of `text`'s top-level object, when it has one that is a string or a number.
pub fn find(text: &[u8]) -> Option<Value> {
    let mut scanner = Scanner::id_only();
    scanner.feed(text);
    scanner.id()
}

impl Scanner {
    /// A scanner that stops reading once it knows the id (or that there is none).
    pub fn id_only() -> Self {
        Self {
            id_only: true,
            ..Self::default()
        }
    }

    /// Reads the next piece of the text.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.id_only && (!self.id.is_unseen() || self.place == Place::Outside) {
                return;
            }
            if self.in_string {
                bytes = self.string_piece(bytes);
                continue;
            }
            self.step(bytes[0]);
            bytes = &bytes[1..];
        }
    }

    /// The id read, when it is a string or a number.
    pub fn id(&self) -> Option<Value> {
        match serde_json::from_slice(self.id.text()?).ok()? {
            id @ (Value::String(_) | Value::Number(_)) => Some(id),
            _ => None,
        }
    }

    /// The JSON text of the id read, whatever it is: for callers with an id type of their own.
    pub fn id_text(&self) -> Option<&[u8]> {
        self.id.text()
    }

    /// The method named, when it is a string: the message is a request or a notification.
    pub fn method(&self) -> Option<String> {
        serde_json::from_slice(self.method.text()?).ok()
    }

    /// How deep the objects and arrays read nest (0 for a scalar; the message itself is 1).
    pub fn depth(&self) -> usize {
        self.deepest
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
            // A name written with escapes is not taken for `id` or `method`.
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
                match (self.open, self.place) {
                    (1, Place::Name) => self.name = Some(Vec::new()),
                    (1, Place::Value) if self.wanted() => self.value = Some(vec![b'"']),
                    (0, _) => self.place = Place::Outside,
                    _ => {}
                }
            }
            b'{' | b'[' => {
                if self.open == 0 && self.place == Place::Start && byte == b'{' {
                    self.place = Place::Name;
                } else if self.open == 0 {
                    // Only an object has an id.
                    self.place = Place::Outside;
                } else if self.open == 1 && self.place == Place::Value {
                    // An object or array is no id, nor a method.
                    self.settle(Found::Unusable);
                }
                self.open += 1;
                self.deepest = self.deepest.max(self.open);
            }
            b'}' | b']' => {
                self.end_scalar();
                self.open = self.open.saturating_sub(1);
                if self.open == 0 {
                    self.place = Place::Outside;
                }
            }
            b':' if self.open == 1 && self.place == Place::Colon => self.place = Place::Value,
            b',' if self.open == 1 => {
                self.end_scalar();
                self.place = Place::Name;
                self.member = Member::Other;
            }
            b' ' | b'\t' | b'\r' | b'\n' => self.end_scalar(),
            _ => {
                if self.open == 1 && self.place == Place::Value && self.wanted() {
                    self.value.get_or_insert_with(Vec::new);
                    self.keep(&[byte]);
                }
            }
        }
    }

    /// Whether the value that comes is one still to be read.
    fn wanted(&self) -> bool {
        match self.member {
            Member::Id => self.id.is_unseen(),
            Member::Method => self.method.is_unseen(),
            Member::Other => false,
        }
    }

    /// Keeps string or scalar bytes that belong to the name or the value being read.
    fn keep(&mut self, bytes: &[u8]) {
        if let Some(name) = &mut self.name {
            name.extend_from_slice(bytes);
            if name.len() > b"method\"".len() {
                self.name = None;
            }
        }
        if let Some(value) = &mut self.value {
            if value.len() + bytes.len() > MAX_VALUE_BYTES {
                self.value = None;
                self.settle(Found::Unusable);
            } else {
                value.extend_from_slice(bytes);
            }
        }
    }

    fn end_string(&mut self) {
        if self.open != 1 {
            return;
        }
        match self.place {
            Place::Name => {
                self.member = match self.name.take().as_deref() {
                    Some(b"id\"") => Member::Id,
                    Some(b"method\"") => Member::Method,
                    _ => Member::Other,
                };
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
            self.settle(Found::Text(value));
        }
        self.place = Place::After;
    }

    /// What the value of the member being read came to.
    fn settle(&mut self, found: Found) {
        match self.member {
            Member::Id if self.id.is_unseen() => self.id = found,
            Member::Method if self.method.is_unseen() => self.method = found,
            _ => {}
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
            assert_eq!(find(text.as_bytes()), Some(id.clone()), "{text}");
            assert_eq!(scan(text.as_bytes()).id(), Some(id), "{text}");
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
            assert_eq!(scan(text.as_bytes()).id(), None, "{text}");
        }
        let long = format!(r#"{{"id":"{}"}}"#, "x".repeat(MAX_VALUE_BYTES));
        assert_eq!(find(long.as_bytes()), None);
    }

    /// Fed in pieces of any size, the text gives the same id.
    #[test]
    fn pieces_change_nothing() {
        let text = r#"{"method":"tools/call","params":{"name":"x","arguments":{"s":"a\"}\\"}},"jsonrpc":"2.0","id":"req-1"}"#;
        for size in 1..text.len() {
            let mut scanner = Scanner::id_only();
            let mut whole = Scanner::default();
            for piece in text.as_bytes().chunks(size) {
                scanner.feed(piece);
                whole.feed(piece);
            }
            assert_eq!(scanner.id(), Some(json!("req-1")), "pieces of {size}");
            assert_eq!(whole.id(), Some(json!("req-1")), "pieces of {size}");
            assert_eq!(
                whole.method().as_deref(),
                Some("tools/call"),
                "pieces of {size}"
            );
            assert_eq!(whole.depth(), 3, "pieces of {size}");
        }
    }

    #[test]
    fn a_scan_finds_depth_method_and_id_in_what_does_not_parse() {
        let scanned =
            scan(br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"cut"#);
        assert_eq!(
            (scanned.depth(), scanned.id(), scanned.method()),
            (4, Some(json!(7)), None)
        );
        // A request names its method; one nested deeper, or a key's text, is not the message's.
        let scanned = scan(
            br#"{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{"method":"x"}"#,
        );
        assert_eq!(scanned.method().as_deref(), Some("elicitation/create"));
        assert_eq!(scanned.id_text(), Some(&b"0"[..]));
        assert_eq!(scan(br#"{"result":{"method":"x"},"id":1}"#).method(), None);
        assert_eq!(scan(br#"{"x":"method","method":7}"#).method(), None);
        // The id last, as some servers write it; strings with brackets, quotes and escapes.
        let scanned = scan(br#"{"result":{"text":"[{\"id\":9}]\\"},"id" : "abc"}"#);
        assert_eq!(scanned.depth(), 2);
        assert_eq!(scanned.id(), Some(json!("abc")));
        // Not UTF-8, and an id nested deeper is not the message's.
        let scanned = scan(b"{\"result\":{\"id\":3,\"t\":\"\xff\"},\"id\":4}");
        assert_eq!(scanned.id(), Some(json!(4)));
        // An id that is neither a number nor a string is no id.
        assert_eq!(scan(br#"{"id":null,"error":{}}"#).id(), None);
        assert_eq!(scan(br#"{"id":[1]}"#).id_text(), None);
        // A key that only contains "id" is not the id.
        assert_eq!(scan(br#"{"idx":5,"x":"id"}"#).id_text(), None);
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        assert_eq!(scan(deep.as_bytes()).depth(), 5000);
        assert_eq!(scan(b"7").depth(), 0);
    }
}
