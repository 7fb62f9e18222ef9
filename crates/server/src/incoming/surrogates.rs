//! Lone UTF-16 surrogate escapes in JSON text, replaced so that the text decodes.
//!
//! JSON allows `\ud800` on its own (JavaScript strings hold lone surrogates, and
//! `JSON.stringify` of a string cut in the middle of an emoji writes one), but a Rust string
//! cannot hold it, so serde_json refuses the whole message. Replacing each lone one with
//! `\ufffd` (the replacement character) before decoding keeps the message and changes only the
//! character that no UTF-8 text can carry.

use std::borrow::Cow;

/// `text` (JSON) with every `\uD800`–`\uDFFF` escape that is not half of a high–low pair replaced
/// by `\ufffd`; borrowed, unchanged, when there is none. An escaped backslash (`\\`) followed by
/// `ud800` is text, not an escape, and stays. Malformed escapes stay for the parser to report.
pub(crate) fn replace_lone_surrogates(text: &[u8]) -> Cow<'_, [u8]> {
    let mut replaced: Option<Vec<u8>> = None;
    // Bytes of `text` before this index are in `replaced` already.
    let mut copied = 0;
    let mut at = 0;
    while let Some(offset) = memchr::memchr(b'\\', &text[at..]) {
        let escape = at + offset;
        if text.get(escape + 1) != Some(&b'u') {
            // Any other escape, `\\` included: two bytes, and the second is not a backslash
            // that starts an escape.
            at = (escape + 2).min(text.len());
            continue;
        }
        let lone = match code_unit(text, escape) {
            Some(0xD800..=0xDBFF) => {
                if matches!(code_unit(text, escape + 6), Some(0xDC00..=0xDFFF)) {
                    // A pair: one character, both halves stay.
                    at = escape + 12;
                    continue;
                }
                true
            }
            Some(0xDC00..=0xDFFF) => true,
            _ => false,
        };
        if lone {
            let output = replaced.get_or_insert_with(|| Vec::with_capacity(text.len()));
            output.extend_from_slice(&text[copied..escape]);
            output.extend_from_slice(b"\\ufffd");
            copied = escape + 6;
            at = escape + 6;
        } else {
            at = escape + 2;
        }
    }
    match replaced {
        None => Cow::Borrowed(text),
        Some(mut output) => {
            output.extend_from_slice(&text[copied..]);
            Cow::Owned(output)
        }
    }
}

/// The code unit of the `\uXXXX` escape at `at`, when there is one there.
fn code_unit(text: &[u8], at: usize) -> Option<u16> {
    let escape = text.get(at..at + 6)?;
    if escape[0] != b'\\' || escape[1] != b'u' {
        return None;
    }
    let digits = std::str::from_utf8(&escape[2..]).ok()?;
    if !digits.bytes().all(|digit| digit.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replaced(text: &str) -> String {
        String::from_utf8(replace_lone_surrogates(text.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn lone_halves_become_the_replacement_character() {
        assert_eq!(replaced(r#""\ud800""#), r#""\ufffd""#);
        assert_eq!(replaced(r#""\uDBFF""#), r#""\ufffd""#);
        assert_eq!(replaced(r#""\udc00""#), r#""\ufffd""#);
        assert_eq!(replaced(r#""a\ud800b""#), r#""a\ufffdb""#);
        // Two high halves: neither is paired.
        assert_eq!(replaced(r#""\ud800\ud800""#), r#""\ufffd\ufffd""#);
        // A pair, then a lone low half.
        assert_eq!(
            replaced(r#""\ud83d\ude00\ude00""#),
            r#""\ud83d\ude00\ufffd""#
        );
        // A low half before a high one is no pair.
        assert_eq!(replaced(r#""\udc00\ud800""#), r#""\ufffd\ufffd""#);
        // An escaped backslash, then an escape.
        assert_eq!(replaced(r#""\\\ud800""#), r#""\\\ufffd""#);
        // Several strings.
        assert_eq!(
            replaced(r#"{"a":"\ud800","b":["x\udfff"]}"#),
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
                matches!(replace_lone_surrogates(text.as_bytes()), Cow::Borrowed(_)),
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
                    let fixed = replace_lone_surrogates(text.as_bytes());
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
