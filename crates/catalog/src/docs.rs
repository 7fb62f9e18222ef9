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

/// A description split into lines, trailing spaces and blank edges removed.
pub(crate) fn description_lines(text: &str) -> Vec<String> {
    let lines: Vec<String> = text
        .lines()
        .map(|line| line.trim_end().to_owned())
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
