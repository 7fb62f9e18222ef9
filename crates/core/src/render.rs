//! The text a model reads for each answer. Kept together so the wording stays consistent.

use crate::catalog_cache::Unavailable;
use crate::discovery::{DescribeAnswer, SearchAnswer, SearchResult};
use crate::error::ExecutionError;
use crate::error::unknown_names_message;
use crate::execution::{ExecutionReport, LogLine};

/// How many names of tools left out of an answer its text lists; `omitted` in the structured
/// content has them all.
const MAX_LISTED_OMITTED: usize = 20;

/// Search hits as lines: signature, then what the tool does; the weak matches after the others,
/// under a line that says so (or, when every hit is weak, after "No strong match"); then how many
/// more did not fit, and the servers whose tools are missing because they are not available.
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
    let (weak, strong): (Vec<&SearchResult>, Vec<&SearchResult>) =
        results.iter().partition(|result| result.weak);
    if strong.is_empty() && !weak.is_empty() {
        // With servers not available, the tool asked for may be one of theirs.
        let among = if unavailable.is_empty() {
            "no tool says it does that"
        } else {
            "no tool of the servers available now says it does that (the others are named below)"
        };
        text.push_str(&format!(
            "No strong match for \"{query}\": {among}. The closest share a word or two with it:\n"
        ));
    }
    for result in &strong {
        push_hit(&mut text, result);
    }
    if !strong.is_empty() && !weak.is_empty() {
        text.push_str("Weak matches:\n");
    }
    for result in &weak {
        push_hit(&mut text, result);
    }
    if answer.omitted > 0 {
        text.push_str(&format!(
            "{} {}matching tools are left out: the answer is limited to the result size (--max-result-bytes). Ask for fewer, or search with more precise words.\n",
            answer.omitted,
            if results.is_empty() { "" } else { "more " }
        ));
    }
    push_unavailable(&mut text, unavailable);
    push_held(&mut text, answer);
    if !results.is_empty() {
        text.push_str("Use describe_tools for full type declarations.");
    }
    text.trim_end().to_owned()
}

/// One hit: its signature, then what it does on the next line.
fn push_hit(text: &mut String, result: &SearchResult) {
    text.push_str(&result.signature);
    if !result.description.is_empty() {
        text.push_str("\n  ");
        text.push_str(&result.description);
    }
    text.push('\n');
}

/// The JSON Schemas of a described tool, when they were asked for, as the model reads them.
fn schemas_text(tool: &crate::Described) -> Option<String> {
    let input = tool.input_schema.as_ref()?;
    let mut text = format!("JSON Schema of {}'s arguments: {input}", tool.name);
    if let Some(output) = &tool.output_schema {
        text.push_str(&format!("\nJSON Schema of its structuredContent: {output}"));
    }
    Some(text)
}

/// The instructions of servers named as a whole, declarations of every described tool (one
/// block per server), then the ones left out for size, then the names that matched nothing.
pub fn describe_text(answer: &DescribeAnswer) -> String {
    let mut text = answer
        .instructions
        .iter()
        .map(|server| {
            format!(
                "Instructions from server \"{}\":\n{}",
                server.server,
                server.instructions.trim_end()
            )
        })
        .chain(Some(answer.declarations.trim_end().to_owned()).filter(|text| !text.is_empty()))
        .chain(answer.tools.iter().filter_map(schemas_text))
        .chain((!answer.tools.is_empty()).then(|| crate::TEXT_RESULT_RULE.to_owned()))
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
    for (name, server) in &answer.unready {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "\"{name}\" is not described: server \"{server}\" has not listed its tools (below)."
        ));
    }
    for (_, why) in &answer.held {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(why);
        text.push('.');
    }
    for (_, why) in &answer.app_only {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(why);
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

/// The held tools the query asks for, one line each, then how many others each server has held.
fn push_held(text: &mut String, answer: &SearchAnswer) {
    if (!answer.held.is_empty() || !answer.held_elsewhere.is_empty())
        && !text.is_empty()
        && !text.ends_with('\n')
    {
        text.push('\n');
    }
    for name in &answer.held {
        text.push_str(&format!(
            "Held: {name} changed its definition since toolweave pinned it, so it cannot be called until the person running toolweave reviews the change with `toolweave trust`.\n"
        ));
    }
    for (server, count) in &answer.held_elsewhere {
        let (tools, changed) = if *count == 1 {
            (
                "tool",
                "its definition changed since toolweave pinned it; `toolweave trust` reviews it",
            )
        } else {
            (
                "tools",
                "their definitions changed since toolweave pinned them; `toolweave trust` reviews them",
            )
        };
        text.push_str(&format!(
            "Held: {count} {}{tools} of \"{server}\" ({changed}).\n",
            if answer.held.is_empty() { "" } else { "other " },
        ));
    }
}

/// The value as compact JSON (indentation would cost the model 1.5 to 2.4 times the tokens of the
/// value itself), then the warnings, then the captured logs; or the error, then the warnings and
/// logs.
pub fn execution_text(report: &ExecutionReport) -> String {
    let mut text = match &report.result {
        Ok(value) => value.to_string(),
        Err(error) => error.to_string(),
    };
    for warning in &report.warnings {
        text.push_str("\nWarning: ");
        text.push_str(warning);
    }
    if !report.logs.is_empty() {
        // A run the log limit ended shows only its last lines, each cut short: the model needs to
        // see where it was, not the flood that ended it.
        let limited = matches!(report.result, Err(ExecutionError::LogLimit { .. }));
        let shown = if limited {
            tail_lines(&report.logs)
        } else {
            report.logs.len()
        };
        let (left, kept) = report.logs.split_at(report.logs.len() - shown);
        let left_out = report.logs_omitted.lines + left.len();
        let left_out_bytes =
            report.logs_omitted.bytes + left.iter().map(|line| line.text.len()).sum::<usize>();
        if left_out == 0 {
            text.push_str("\n\n--- console ---");
        } else {
            text.push_str(&format!(
                "\n\n--- console: the last {} lines; the {left_out} before them ({left_out_bytes} \
                 bytes) are left out ---",
                kept.len()
            ));
        }
        for line in kept {
            text.push('\n');
            if line.stream != "log" {
                text.push_str(&format!("[{}] ", line.stream));
            }
            if limited {
                text.push_str(&crate::error::cut(line.text.clone(), LOG_LIMIT_TAIL_BYTES));
            } else {
                text.push_str(&line.text);
            }
        }
    }
    text
}

/// Lines shown of a run the log limit ended: the last ones, at most [`LOG_LIMIT_TAIL_LINES`]
/// and [`LOG_LIMIT_TAIL_BYTES`] (always the last line, cut to that many bytes).
const LOG_LIMIT_TAIL_LINES: usize = 20;
/// See [`LOG_LIMIT_TAIL_LINES`].
const LOG_LIMIT_TAIL_BYTES: usize = 2048;

/// How many of the last `logs` fit the tail shown of a run the log limit ended.
fn tail_lines(logs: &[LogLine]) -> usize {
    let mut bytes = 0;
    let mut shown = 0;
    for line in logs.iter().rev().take(LOG_LIMIT_TAIL_LINES) {
        bytes += line.text.len();
        if shown > 0 && bytes > LOG_LIMIT_TAIL_BYTES {
            break;
        }
        shown += 1;
    }
    shown
}
