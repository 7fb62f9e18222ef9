//! Lone UTF-16 surrogates, made well-formed where guest text reaches the host and where a
//! client's request does.
//!
//! A JavaScript string is a sequence of UTF-16 code units and may hold half of a surrogate pair
//! on its own: `"😀".slice(0, 1)` is one. A Rust `String` cannot hold one, and serde_json refuses
//! the escape `JSON.stringify` writes for one (`"\ud83d"`). toolweave keeps one rule wherever
//! guest text becomes the host's: each lone surrogate becomes U+FFFD, the replacement character,
//! as JavaScript's own `String.prototype.toWellFormed` does. Text that is JSON gets the escape
//! `\ufffd` in its place; text read from QuickJS directly (which encodes a lone surrogate as the
//! three bytes UTF-8 would give its code point) gets the character.
//!
//! A client's request gets the same rule, which works around rmcp: serde_json refuses the escape,
//! so rmcp 3.11 drops such a request unanswered over stdio
//! (`transport::async_rw::try_parse_with_compatibility` fails, and
//! `AsyncRwTransport::receive` ignores the line as unparsable) and refuses it with 415 over
//! streamable HTTP (`transport::common::server_side_http::expect_json`). A JavaScript client
//! whose argument holds half an emoji would never hear back.

use std::borrow::Cow;

/// The escape that replaces a lone surrogate's in JSON text: as long as any `\uXXXX`, so the
/// replacement happens in place.
const REPLACEMENT_ESCAPE: &[u8; 6] = b"\\ufffd";

/// Where JSON text holds a `\uXXXX` escape of a lone surrogate: a high surrogate not followed by
/// an escaped low one, or a low surrogate not preceded by a high one. Each offset is that of the
/// escape's backslash. An escaped backslash (`\\ud800`) is a backslash followed by text, not an
/// escape, and is left alone; so is anything that is not a complete escape (the JSON parser
/// reports it).
pub fn lone_surrogate_escapes(json: &[u8]) -> Vec<usize> {
    let mut found = Vec::new();
    let mut index = 0;
    while let Some(backslash) = json
        .get(index..)
        .and_then(|rest| memchr::memchr(b'\\', rest))
    {
        let at = index + backslash;
        let Some(unit) = unicode_escape(json, at) else {
            // `\"`, `\\`, `\n`...: two bytes, whatever the second is.
            index = at + 2;
            continue;
        };
        index = at + REPLACEMENT_ESCAPE.len();
        match unit {
            0xD800..=0xDBFF => match unicode_escape(json, index) {
                Some(0xDC00..=0xDFFF) => index += REPLACEMENT_ESCAPE.len(),
                _ => found.push(at),
            },
            0xDC00..=0xDFFF => found.push(at),
            _ => {}
        }
    }
    found
}

/// Replaces, in place, every escape of a lone surrogate in JSON text (see
/// [`lone_surrogate_escapes`]) with `\ufffd`, so that serde_json accepts the text. Returns how
/// many it replaced. ASCII replaces ASCII: text that was UTF-8 stays UTF-8.
pub fn replace_lone_surrogate_escapes(json: &mut [u8]) -> usize {
    let found = lone_surrogate_escapes(json);
    for &at in &found {
        if let Some(escape) = json.get_mut(at..at + REPLACEMENT_ESCAPE.len()) {
            escape.copy_from_slice(REPLACEMENT_ESCAPE);
        }
    }
    found.len()
}

/// JSON bytes with every escape of a lone surrogate replaced by `\ufffd` (what a client's
/// request may carry); borrowed, unchanged, when there is none.
pub fn without_lone_surrogate_escapes(json: &[u8]) -> Cow<'_, [u8]> {
    if lone_surrogate_escapes(json).is_empty() {
        return Cow::Borrowed(json);
    }
    let mut owned = json.to_vec();
    replace_lone_surrogate_escapes(&mut owned);
    Cow::Owned(owned)
}

/// JSON text with every escape of a lone surrogate replaced by `\ufffd`; the text itself, not a
/// copy, when it holds none.
pub fn well_formed_json(json: String) -> String {
    if lone_surrogate_escapes(json.as_bytes()).is_empty() {
        return json;
    }
    let mut bytes = json.into_bytes();
    replace_lone_surrogate_escapes(&mut bytes);
    // ASCII replaced ASCII in text that was a `String`, so this is UTF-8; should that ever be
    // untrue, a replacement character is still better than losing the text.
    String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// Text as QuickJS hands it out (UTF-8, except that a lone surrogate is the three bytes of its
/// code point, as WTF-8 has it) with each lone surrogate replaced by U+FFFD; borrowed when there
/// is none. Any other byte sequence that is not UTF-8 is replaced as `from_utf8_lossy` would.
pub fn well_formed_text(bytes: &[u8]) -> Cow<'_, str> {
    let mut rest = bytes;
    let mut text = String::new();
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) if text.is_empty() && rest.len() == bytes.len() => {
                return Cow::Borrowed(valid);
            }
            Ok(valid) => {
                text.push_str(valid);
                return Cow::Owned(text);
            }
            Err(error) => {
                let (valid, after) = rest.split_at(error.valid_up_to());
                text.push_str(&String::from_utf8_lossy(valid));
                text.push(char::REPLACEMENT_CHARACTER);
                let skip = match after {
                    // A surrogate code point, D800 to DFFF, encoded as UTF-8 would a scalar value.
                    [0xED, 0xA0..=0xBF, 0x80..=0xBF, ..] => 3,
                    _ => error.error_len().unwrap_or(after.len()),
                };
                rest = &after[skip.min(after.len())..];
                if rest.is_empty() {
                    return Cow::Owned(text);
                }
            }
        }
    }
}

/// The code unit of a complete `\uXXXX` escape whose backslash is at `at`, if there is one.
fn unicode_escape(json: &[u8], at: usize) -> Option<u16> {
    let escape = json.get(at..at + REPLACEMENT_ESCAPE.len())?;
    if escape[0] != b'\\' || escape[1] != b'u' {
        return None;
    }
    let digits = std::str::from_utf8(&escape[2..]).ok()?;
    if !digits.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replaced(json: &str) -> String {
        well_formed_json(json.to_owned())
    }

    #[test]
    fn lone_surrogate_escapes_become_the_replacement_character() {
        assert_eq!(replaced(r#""\ud83d""#), r#""\ufffd""#);
        assert_eq!(replaced(r#""\uDE00 x""#), r#""\ufffd x""#);
        assert_eq!(
            replaced(r#"["a\udbffb", "\udc00"]"#),
            r#"["a\ufffdb", "\ufffd"]"#
        );
        // Two high surrogates in a row: both are lone.
        assert_eq!(replaced(r#""\ud83d\ud83d""#), r#""\ufffd\ufffd""#);
        // A low surrogate after a pair is lone; the pair stays.
        assert_eq!(
            replaced(r#""\ud83d\ude00\ude00""#),
            r#""\ud83d\ude00\ufffd""#
        );
        // A high surrogate followed by another escape keeps that escape.
        assert_eq!(replaced(r#""\ud83d\n""#), r#""\ufffd\n""#);
        // In keys too, and at the very end of the text.
        assert_eq!(replaced(r#"{"\ud800":1}"#), r#"{"\ufffd":1}"#);
        assert_eq!(replaced(r"\ud800"), r"\ufffd");
        for json in [r#""\ud83d""#, r#"{"\ud800": ["\udfff"]}"#] {
            let value: serde_json::Value = serde_json::from_str(&replaced(json)).unwrap();
            assert!(value.to_string().contains('\u{fffd}'), "{value}");
        }
    }

    #[test]
    fn everything_else_is_left_as_it_is() {
        for json in [
            r#""plain""#,
            r#""\ud83d\ude00 pair""#,
            r#""\u00e9\u0041""#,
            // An escaped backslash followed by text that looks like an escape.
            r#""\\ud83d""#,
            r#""\\\\ud83d""#,
            r#""\"\\""#,
            // Incomplete or malformed escapes are the parser's to report.
            r#""\ud8""#,
            r#""\uzzzz""#,
            "\"\\",
            "\\",
            "",
            "\"😀 é\"",
        ] {
            assert_eq!(replaced(json), json);
            assert!(lone_surrogate_escapes(json.as_bytes()).is_empty(), "{json}");
        }
        // After an escaped backslash, a real escape is still found.
        assert_eq!(replaced(r#""\\\ud83d""#), r#""\\\ufffd""#);
    }

    #[test]
    fn replacement_in_place_counts_and_keeps_the_length() {
        let mut bytes = br#"["\ud800", "\\ud800", "\udc00\ud800"]"#.to_vec();
        let length = bytes.len();
        assert_eq!(replace_lone_surrogate_escapes(&mut bytes), 3);
        assert_eq!(bytes.len(), length);
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            r#"["\ufffd", "\\ud800", "\ufffd\ufffd"]"#
        );
    }

    #[test]
    fn quickjs_text_gets_one_replacement_character_per_lone_surrogate() {
        assert!(matches!(
            well_formed_text("plain é 😀".as_bytes()),
            Cow::Borrowed("plain é 😀")
        ));
        // U+D83D and U+DE00 as QuickJS encodes them on their own.
        assert_eq!(well_formed_text(b"a\xED\xA0\xBDb"), "a\u{fffd}b");
        assert_eq!(well_formed_text(b"\xED\xB8\x80"), "\u{fffd}");
        assert_eq!(
            well_formed_text(b"\xED\xA0\xBD\xED\xA0\xBD x \xF0\x9F\x98\x80"),
            "\u{fffd}\u{fffd} x 😀"
        );
        // Anything else that is not UTF-8 is replaced too, never dropped.
        assert_eq!(well_formed_text(b"a\xFFb\xC3"), "a\u{fffd}b\u{fffd}");
    }

    fn request_replaced(text: &str) -> String {
        String::from_utf8(without_lone_surrogate_escapes(text.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn lone_halves_in_a_request_become_the_replacement_character() {
        assert_eq!(request_replaced(r#""\ud800""#), r#""\ufffd""#);
        assert_eq!(request_replaced(r#""\uDBFF""#), r#""\ufffd""#);
        assert_eq!(request_replaced(r#""\udc00""#), r#""\ufffd""#);
        assert_eq!(request_replaced(r#""a\ud800b""#), r#""a\ufffdb""#);
        // Two high halves: neither is paired.
        assert_eq!(request_replaced(r#""\ud800\ud800""#), r#""\ufffd\ufffd""#);
        // A pair, then a lone low half.
        assert_eq!(
            request_replaced(r#""\ud83d\ude00\ude00""#),
            r#""\ud83d\ude00\ufffd""#
        );
        // A low half before a high one is no pair.
        assert_eq!(request_replaced(r#""\udc00\ud800""#), r#""\ufffd\ufffd""#);
        // An escaped backslash, then an escape.
        assert_eq!(request_replaced(r#""\\\ud800""#), r#""\\\ufffd""#);
        // Several strings.
        assert_eq!(
            request_replaced(r#"{"a":"\ud800","b":["x\udfff"]}"#),
            r#"{"a":"\ufffd","b":["x\ufffd"]}"#
        );
    }

    #[test]
    fn text_without_lone_halves_is_borrowed_unchanged() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#""\ud83d\ude00""#,
            // A backslash written as an escape, followed by the letters of an escape.
            r#""\\ud800""#,
            r#""\\\\ud800""#,
            r#""\u00e9\n\t\"\/""#,
            // Malformed escapes are the parser's to report.
            r#""\ud8""#,
            r#""\ud80g""#,
            r#""\"#,
            r#"\u"#,
            "",
        ] {
            assert!(
                matches!(
                    without_lone_surrogate_escapes(text.as_bytes()),
                    Cow::Borrowed(_)
                ),
                "{text}"
            );
        }
    }

    /// Whatever JavaScript's `JSON.stringify` writes for a string with lone halves decodes once
    /// replaced, into the same text with U+FFFD in their place.
    #[test]
    fn replaced_text_decodes() {
        let halves = [
            "\\ud800",
            "\\udbff",
            "\\udc00",
            "\\udfff",
            "\\ud83d\\ude00",
            "a",
            "\\\\",
        ];
        for first in halves {
            for second in halves {
                for third in halves {
                    let text = format!("\"{first}{second}{third}\"");
                    let fixed = without_lone_surrogate_escapes(text.as_bytes());
                    let decoded: String = serde_json::from_slice(&fixed)
                        .unwrap_or_else(|error| panic!("{text}: {error}"));
                    let expected: String = [first, second, third]
                        .iter()
                        .map(|half| match *half {
                            "\\ud83d\\ude00" => "😀",
                            "a" => "a",
                            "\\\\" => "\\",
                            _ => "\u{fffd}",
                        })
                        .collect();
                    // A lone high half followed by a lone low one makes a pair: another character.
                    let ends_high = |half: &str| half == "\\ud800" || half == "\\udbff";
                    let starts_low = |half: &str| half == "\\udc00" || half == "\\udfff";
                    if ends_high(first) && starts_low(second)
                        || ends_high(second) && starts_low(third)
                    {
                        continue;
                    }
                    assert_eq!(decoded, expected, "{text}");
                }
            }
        }
    }
}
