//! Doc text shared by the TypeScript and Python renderers: descriptions and schema facts as
//! short sentences a model reads quickly.

use crate::names::quote;
use crate::schema::Documentation;

/// The longest a default value or pattern is shown.
const MAX_DEFAULT_WIDTH: usize = 160;

/// The lines of a doc comment for a value: description, then schema facts as short sentences.
pub(crate) fn documentation_lines(doc: &Documentation) -> Vec<String> {
    let mut facts: Vec<String> = Vec::new();
    if doc.deprecated {
        facts.push("Deprecated".to_owned());
    }
    if let Some(default) = &doc.default {
        facts.push(format!("Default: {}", shorten(&default.to_string())));
    }
    if let Some(format) = &doc.format {
        facts.push(format!("Format: {format}"));
    }
    if let Some(pattern) = &doc.pattern {
        facts.push(format!("Pattern: {}", shorten(&quote(pattern))));
    }
    match (&doc.minimum, doc.exclusive_minimum) {
        (Some(minimum), false) => facts.push(format!("Minimum: {minimum}")),
        (Some(minimum), true) => facts.push(format!("Greater than {minimum}")),
        (None, _) => {}
    }
    match (&doc.maximum, doc.exclusive_maximum) {
        (Some(maximum), false) => facts.push(format!("Maximum: {maximum}")),
        (Some(maximum), true) => facts.push(format!("Less than {maximum}")),
        (None, _) => {}
    }
    let counts = [
        ("Min length", doc.min_length),
        ("Max length", doc.max_length),
        ("Min items", doc.min_items),
        ("Max items", doc.max_items),
    ];
    for (label, count) in counts {
        if let Some(count) = count {
            facts.push(format!("{label}: {count}"));
        }
    }
    let mut lines: Vec<String> = doc
        .description
        .as_deref()
        .map(description_lines)
        .unwrap_or_default();
    if !facts.is_empty() {
        let facts = format!("{}.", facts.join(". "));
        // After a one-line description the facts go on the same line; after a longer one, on
        // their own.
        match lines.as_mut_slice() {
            [only] => {
                if !only.ends_with(['.', '!', '?', ':']) {
                    only.push('.');
                }
                only.push(' ');
                only.push_str(&facts);
            }
            _ => lines.push(facts),
        }
    }
    lines
}

/// A description split into lines, trailing spaces and blank edges removed, characters that
/// do not show left out (see [`strip_invisible`]).
pub(crate) fn description_lines(text: &str) -> Vec<String> {
    let lines: Vec<String> = text
        .lines()
        .map(|line| strip_invisible(line.trim_end()))
        .collect();
    let first = lines.iter().position(|line| !line.is_empty());
    let last = lines.iter().rposition(|line| !line.is_empty());
    match (first, last) {
        (Some(first), Some(last)) => lines[first..=last].to_vec(),
        _ => Vec::new(),
    }
}

fn shorten(text: &str) -> String {
    if text.chars().count() <= MAX_DEFAULT_WIDTH {
        return text.to_owned();
    }
    let mut short: String = text.chars().take(MAX_DEFAULT_WIDTH - 1).collect();
    short.push('…');
    short
}

/// `text` with every character that does not show written as a `\u{...}` escape: control
/// characters (but newlines and tabs), zero-width and other invisible formatting characters,
/// bidirectional overrides and isolates (which reorder what a person sees), and Unicode tag
/// characters (which spell text no one sees). What a person reads of a tool or a server
/// (`toolweave tools`, `toolweave servers`, the changes `toolweave trust` shows): a description
/// can hide instructions in them, and escaped they show.
pub fn visible(text: &str) -> String {
    if !text.chars().any(hidden) {
        return text.to_owned();
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for character in text.chars() {
        if hidden(character) {
            shown.push_str(&format!("\\u{{{:x}}}", u32::from(character)));
        } else {
            shown.push(character);
        }
    }
    shown
}

/// `text` without the characters [`visible`] escapes, and without terminal escape sequences
/// (`ESC [ 1 ; 31 m`, `ESC ] ... BEL`, which colour or retitle a terminal and are noise to a
/// model): what the model reads of a tool's title and descriptions and of a server's errors.
/// Hidden, they could carry words the person who reads the definition never sees; left out, the
/// model reads what a person sees.
pub fn strip_invisible(text: &str) -> String {
    if !text.chars().any(hidden) {
        return text.to_owned();
    }
    let mut kept = String::with_capacity(text.len());
    let mut characters = text.chars().peekable();
    while let Some(character) = characters.next() {
        match character {
            // CSI: parameters and intermediates up to a final byte in @..~.
            '\u{1b}' if characters.peek() == Some(&'[') => {
                characters.next();
                skip_control_sequence(&mut characters);
            }
            '\u{9b}' => skip_control_sequence(&mut characters),
            // OSC, DCS, SOS, PM, APC: a string up to BEL or ST (ESC \).
            '\u{1b}' if matches!(characters.peek(), Some(']' | 'P' | 'X' | '^' | '_')) => {
                characters.next();
                while let Some(inner) = characters.next() {
                    if inner == '\u{7}' || inner == '\u{9c}' {
                        break;
                    }
                    if inner == '\u{1b}' && characters.peek() == Some(&'\\') {
                        characters.next();
                        break;
                    }
                }
            }
            // Any other escape: ESC, intermediates (`(`, `#`, ...) and a final character.
            '\u{1b}' => {
                while characters
                    .next_if(|next| ('\u{20}'..='\u{2f}').contains(next))
                    .is_some()
                {}
                characters.next_if(|next| ('\u{30}'..='\u{7e}').contains(next));
            }
            other if hidden(other) => {}
            other => kept.push(other),
        }
    }
    kept
}

/// Skips a control sequence's parameters and intermediates and its final byte.
fn skip_control_sequence(characters: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for character in characters.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&character) || !('\u{20}'..='\u{7e}').contains(&character)
        {
            break;
        }
    }
}

/// Whether `character` is one [`visible`] escapes and [`strip_invisible`] leaves out.
fn hidden(character: char) -> bool {
    matches!(character,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{c}' | '\u{d}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
        | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}'
        | '\u{ffa0}' | '\u{fff0}'..='\u{fffb}' | '\u{1d173}'..='\u{1d17a}'
        | '\u{e0000}'..='\u{e0fff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_characters_are_written_as_escapes() {
        assert_eq!(visible("Adds two numbers."), "Adds two numbers.");
        assert_eq!(
            visible("Adds\u{200b} two\u{202e}srebmun\u{202c}. \u{1b}[8mhidden\u{1b}[0m"),
            "Adds\\u{200b} two\\u{202e}srebmun\\u{202c}. \\u{1b}[8mhidden\\u{1b}[0m"
        );
        // Tag characters spell "hi" where no one sees it.
        assert_eq!(visible("ok\u{e0068}\u{e0069}"), "ok\\u{e0068}\\u{e0069}");
        // Tabs, newlines and ordinary non-ASCII text stay as they are.
        assert_eq!(visible("a\tb\nc é 数 😀"), "a\tb\nc é 数 😀");
        assert_eq!(
            description_lines("First\u{200d}\n\nSecond"),
            ["First", "", "Second"]
        );
        assert_eq!(
            strip_invisible("Adds\u{200b} two\u{202e}srebmun\u{202c}.\u{2066}\u{feff}\u{85}\ta\nb"),
            "Adds twosrebmun.\ta\nb"
        );
    }

    #[test]
    fn terminal_escape_sequences_are_left_out_whole() {
        assert_eq!(
            strip_invisible("\u{1b}[1;31mError:\u{1b}[0m no such file \u{1b}[8mhidden\u{1b}[m"),
            "Error: no such file hidden"
        );
        assert_eq!(
            strip_invisible(
                "\u{1b}]0;title\u{7}ok \u{1b}]8;;https://x\u{1b}\\link\u{1b}]8;;\u{1b}\\"
            ),
            "ok link"
        );
        assert_eq!(strip_invisible("a\u{1b}(Bb\u{9b}2Kc\u{1b}"), "abc");
        // A `[` that follows no escape is text.
        assert_eq!(strip_invisible("[1;31m] \u{200b}x"), "[1;31m] x");
    }
}
