//! Python exceptions as the engine reports them: positions in the code the model wrote, a
//! traceback of bounded size, and syntax errors with a one-line code frame.
//!
//! The engine runs the guest's code behind a one-line prelude ([`PRELUDE`]), so every line Monty
//! reports is one more than the model's; this module is the one place that takes it off.

use std::fmt::Write as _;

use monty_types::{ExcType, MontyException, StackFrame};

use crate::{EngineError, Language, Manifest, hints};

/// Run before the guest's code, on a line of its own: `asyncio` is there without an import.
pub(super) const PRELUDE: &str = "import asyncio\n";
/// Lines [`PRELUDE`] adds before the guest's first line.
const PRELUDE_LINES: u32 = 1;
/// The file name tracebacks show.
pub(super) const SCRIPT_NAME: &str = "main.py";
/// Traceback entries kept from the outermost and the innermost end of a long traceback.
const OUTER_FRAMES: usize = 10;
const INNER_FRAMES: usize = 30;
/// Identical consecutive frames shown before they are counted instead (as CPython does).
const REPEATED_FRAMES_SHOWN: usize = 3;
/// What Monty (and ruff's parser before it) says of code nested deeper than it follows.
const TOO_DEEPLY_NESTED: &str = "Source is too deeply nested";
/// How deeply Monty lets code nest: its `MAX_NESTING_DEPTH`, which it does not export. (Monty
/// built with debug assertions allows 30; the workspace builds its dependencies without them in
/// every profile, see `Cargo.toml`.) ruff's parser, which reads the code first, stops at 202
/// levels of its own.
const MAX_NESTING: u32 = 200;

/// Added to an uncaught `ImportError` of a name a module lacks.
const SUBSET_HINT: &str = "toolweave's Python implements part of the standard library";

/// The line in the guest's code for a line Monty reports; `None` inside the prelude.
fn user_line(line: u32) -> Option<u32> {
    line.checked_sub(PRELUDE_LINES).filter(|line| *line >= 1)
}

/// How the innermost frame of an exception raised it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Raiser {
    /// The interpreter, in the middle of an expression.
    Interpreter,
    /// A `raise` of a new exception in the guest's code.
    Guest,
    /// A bare `raise` in the guest's code, passing on the exception being handled (which may be
    /// the interpreter's).
    Reraise,
}

/// Who raised `exception`, from its innermost frame.
pub(super) fn raiser(exception: &MontyException) -> Raiser {
    let Some(frame) = exception.traceback().last() else {
        return Raiser::Interpreter;
    };
    // Monty hides the caret for `raise` statements and for attribute errors; the source line
    // tells them apart.
    if !frame.hide_caret {
        return Raiser::Interpreter;
    }
    let line = frame.preview_line.as_deref().unwrap_or_default().trim();
    match line.strip_prefix("raise") {
        Some(rest) if rest.trim().is_empty() => Raiser::Reraise,
        Some(rest) if rest.starts_with(|c: char| c.is_whitespace() || c == '(') => Raiser::Guest,
        _ => Raiser::Interpreter,
    }
}

/// An uncaught exception as a guest error, positioned in the guest's code. A module or a name
/// the sandbox does not have gets the way out (the tools of `manifest` that may do it).
pub(super) fn guest_error(exception: &MontyException, manifest: &Manifest) -> EngineError {
    let name = exception.exc_type().to_string();
    let mut message = exception.message().unwrap_or_default().to_owned();
    let quoted = |prefix: &str| {
        message
            .strip_prefix(prefix)
            .and_then(|rest| rest.split('\'').next())
            .map(str::to_owned)
    };
    let hint = match exception.exc_type() {
        ExcType::ModuleNotFoundError => quoted("No module named '")
            .map(|module| hints::missing_module(&module, Language::Python, manifest)),
        ExcType::ImportError => Some(SUBSET_HINT.to_owned()),
        ExcType::NameError => quoted("name '")
            .and_then(|missing| hints::missing_name(&missing, Language::Python, manifest)),
        ExcType::TypeError => quoted("'tools.")
            .filter(|_| message.ends_with("' object is not callable"))
            .map(|server| hints::server_called(&server, manifest)),
        _ => None,
    };
    if let Some(hint) = hint {
        message = format!("{message} ({hint})");
    }
    let innermost = exception
        .traceback()
        .iter()
        .rev()
        .find_map(|frame| Some((user_line(frame.start.line)?, frame.start.column)));
    let stack = traceback(exception.traceback(), &name, &message);
    EngineError::Guest {
        message,
        name,
        line: innermost.map(|(line, _)| line),
        column: innermost.map(|(_, column)| column),
        stack: Some(stack),
    }
}

/// A compile-time failure (syntax, or syntax Monty does not support) with a code frame.
pub(super) fn syntax_error(exception: &MontyException, code: &str) -> EngineError {
    let message = exception.message().unwrap_or_default();
    let message = match exception.exc_type() {
        ExcType::SyntaxError if message == TOO_DEEPLY_NESTED => format!(
            "{TOO_DEEPLY_NESTED}: more than {MAX_NESTING} levels of statements, brackets, calls, \
             operators or lambdas inside one another. Split it up: give inner parts names, or \
             build deeply nested data in a loop"
        ),
        ExcType::SyntaxError => message.to_owned(),
        _ => match message.strip_prefix("The monty syntax parser does not yet support ") {
            Some(construct) => {
                format!("{construct}: not supported by toolweave's Python (a subset of Python 3)")
            }
            None => format!("{}: {message}", exception.exc_type()),
        },
    };
    let (line, column) = exception.traceback().first().map_or((1, 1), |frame| {
        (
            user_line(frame.start.line).unwrap_or(1),
            frame.start.column.max(1),
        )
    });
    EngineError::Syntax {
        message,
        line,
        column,
        frame: crate::program::code_frame(code, line, column),
    }
}

/// One traceback entry: a frame, or a count of repeats of the frame before it.
enum Entry<'a> {
    Frame(&'a StackFrame),
    Repeated(usize),
}

/// The traceback as CPython prints it, with the guest's line numbers, identical consecutive
/// frames counted, and the middle of a very long traceback left out.
fn traceback(frames: &[StackFrame], name: &str, message: &str) -> String {
    let same = |a: &StackFrame, b: &StackFrame| {
        a.start.line == b.start.line
            && a.start.column == b.start.column
            && a.frame_name == b.frame_name
    };
    let mut entries = Vec::new();
    let mut index = 0;
    while index < frames.len() {
        let run = frames[index..]
            .iter()
            .take_while(|frame| same(frame, &frames[index]))
            .count();
        for frame in &frames[index..index + run.min(REPEATED_FRAMES_SHOWN)] {
            entries.push(Entry::Frame(frame));
        }
        if run > REPEATED_FRAMES_SHOWN {
            entries.push(Entry::Repeated(run - REPEATED_FRAMES_SHOWN));
        }
        index += run;
    }
    let mut text = String::new();
    if !entries.is_empty() {
        text.push_str("Traceback (most recent call last):\n");
    }
    let omitted = entries.len().saturating_sub(OUTER_FRAMES + INNER_FRAMES);
    for (position, entry) in entries.iter().enumerate() {
        if omitted > 0 && position == OUTER_FRAMES {
            let _ = writeln!(text, "  [... {omitted} more entries ...]");
        }
        if omitted > 0 && (OUTER_FRAMES..OUTER_FRAMES + omitted).contains(&position) {
            continue;
        }
        match entry {
            Entry::Repeated(count) => {
                let _ = writeln!(text, "  [Previous line repeated {count} more times]");
            }
            Entry::Frame(frame) => {
                let Some(line) = user_line(frame.start.line) else {
                    continue;
                };
                let _ = write!(text, "  File \"{SCRIPT_NAME}\", line {line}");
                if let Some(function) = &frame.frame_name {
                    let _ = write!(text, ", in {function}");
                }
                text.push('\n');
                if let Some(preview) = frame
                    .preview_line
                    .as_deref()
                    .and_then(|preview| preview.lines().next())
                {
                    let _ = writeln!(text, "    {}", preview.trim());
                }
            }
        }
    }
    if message.is_empty() {
        text.push_str(name);
    } else {
        let _ = write!(text, "{name}: {message}");
    }
    text
}
