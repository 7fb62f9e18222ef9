//! The text a model reads for each answer. Kept together so the wording stays consistent.

use crate::bridge::unknown_names_message;
use crate::executor::ExecutionReport;
use crate::gateway::{DescribeAnswer, SearchAnswer, Unavailable};

/// How many names of tools left out of an answer its text lists; `omitted` in the structured
/// content has them all.
const MAX_LISTED_OMITTED: usize = 20;

/// Search hits as lines: signature, then the one-line description; then how many more did not
/// fit, and the servers whose tools are missing from them because they are not available.
pub fn search_text(query: &str, answer: &SearchAnswer, unavailable: &[Unavailable]) -> String {
    let results = &answer.results;
    let mut text = String::new();
    if results.is_empty() && answer.omitted == 0 {
        if query.trim().is_empty() {
            text.push_str("No tools are available.");
        } else {
            text.push_str(&format!(
                "No tools match \"{query}\". Try other words, or an empty query to list every tool."
            ));
        }
    }
    for result in results {
        text.push_str(&result.signature);
        if !result.description.is_empty() {
            text.push_str("\n  ");
            text.push_str(&result.description);
        }
        text.push('\n');
    }
    if answer.omitted > 0 {
        text.push_str(&format!(
            "{} {}matching tools are left out: the answer is limited to the result size (--max-result-bytes). Ask for fewer, or search with more precise words.\n",
            answer.omitted,
            if results.is_empty() { "" } else { "more " }
        ));
    }
    push_unavailable(&mut text, unavailable);
    if !results.is_empty() {
        text.push_str("Use describe_tools for full type declarations.");
    }
    text.trim_end().to_owned()
}

/// Declarations of every described tool, then the ones left out for size, then the names that
/// matched nothing.
pub fn describe_text(answer: &DescribeAnswer) -> String {
    let mut text = answer
        .tools
        .iter()
        .map(|tool| tool.declaration.trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n\n");
    if !answer.omitted.is_empty() {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        let listed = answer.omitted.len().min(MAX_LISTED_OMITTED);
        text.push_str(&format!(
            "{} {}tools are not described: the answer is limited to the result size (--max-result-bytes). Describe them a few at a time: {}",
            answer.omitted.len(),
            if answer.tools.is_empty() { "" } else { "more " },
            answer.omitted[..listed].join(", ")
        ));
        if listed < answer.omitted.len() {
            text.push_str(&format!(" and {} more", answer.omitted.len() - listed));
        }
        text.push('.');
    }
    if !answer.unknown.is_empty() {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        // The reader is the model, which searches with the `search_tools` MCP tool.
        text.push_str(&unknown_names_message(&answer.unknown, "search_tools"));
    }
    push_unavailable(&mut text, &answer.unavailable);
    text.trim_end().to_owned()
}

/// One line per server that is not available, after what `text` holds.
fn push_unavailable(text: &mut String, unavailable: &[Unavailable]) {
    for server in unavailable {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("Not available: ");
        text.push_str(&server.reason);
        text.push('\n');
    }
}

/// The value as JSON, then the warnings, then the captured logs; or the error, then the
/// warnings and logs.
pub fn execution_text(report: &ExecutionReport) -> String {
    let mut text = match &report.result {
        Ok(value) => serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string()),
        Err(error) => error.to_string(),
    };
    for warning in &report.warnings {
        text.push_str("\nWarning: ");
        text.push_str(warning);
    }
    if !report.logs.is_empty() {
        let omitted = report.logs_omitted;
        if omitted.lines == 0 {
            text.push_str("\n\n--- console ---");
        } else {
            text.push_str(&format!(
                "\n\n--- console: the last {} lines; the {} before them ({} bytes) are left out ---",
                report.logs.len(),
                omitted.lines,
                omitted.bytes
            ));
        }
        for line in &report.logs {
            text.push('\n');
            if line.stream != "log" {
                text.push_str(&format!("[{}] ", line.stream));
            }
            text.push_str(&line.text);
        }
    }
    text
}
