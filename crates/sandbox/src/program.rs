//! Programs as models write them, made to run as meant before an engine sees them, in both
//! languages: a markdown fence around the code is blanked out (every line keeps its number and
//! every character its offset), a Python program whose entry function is defined and never
//! called gets a call to it (`javascript/transpile.rs` does the same for JavaScript), and a program that
//! computed something and returned nothing is told why its value is empty.

use std::borrow::Cow;

use ruff_python_ast::visitor::{Visitor, walk_expr};
use ruff_python_ast::{Expr, ExprContext, Stmt};

use crate::Language;

/// What, at the end of a program, left it without a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ending {
    /// A declaration or assignment, of this name when it names one.
    Declaration(Option<String>),
    /// A function defined and never called, of this name, async or not.
    Function { name: String, is_async: bool },
    /// A loop.
    Loop,
    /// Any other statement without a value.
    Other,
}

/// The warning for a program that ended with `ending`, returned nothing and printed nothing.
pub(crate) fn no_value_warning(language: Language, ending: &Ending) -> String {
    match language {
        Language::JavaScript | Language::TypeScript => {
            let head = "the program returned nothing (its value is undefined, sent as null):";
            match ending {
                Ending::Declaration(Some(name)) => format!(
                    "{head} it ends by declaring `{name}`. End it with `return {name}` (or \
                     `{name}` alone on the last line)."
                ),
                Ending::Declaration(None) => format!(
                    "{head} it ends with a declaration. End it with `return` and the value you \
                     need."
                ),
                Ending::Function { name, is_async } => format!(
                    "{head} it ends by defining `{name}` without calling it. End it with \
                     `return {}{name}()`.",
                    if *is_async { "await " } else { "" }
                ),
                Ending::Loop => format!(
                    "{head} it ends with a loop, which has no value. Collect what you need in a \
                     variable, and end with `return` and that variable."
                ),
                Ending::Other => {
                    format!("{head} end it with `return` and the value you need.")
                }
            }
        }
        Language::Python => {
            let head = "the program returned nothing (its value is None, sent as null; a \
                        program's value is its last expression):";
            match ending {
                Ending::Declaration(Some(name)) => format!(
                    "{head} it ends by assigning `{name}`. End it with `{name}` alone on the \
                     last line."
                ),
                Ending::Declaration(None) => format!(
                    "{head} it ends with an assignment. End it with the value you need, alone \
                     on the last line."
                ),
                Ending::Function { name, is_async } => format!(
                    "{head} it ends by defining `{name}` without calling it. End it with \
                     `{}{name}()`.",
                    if *is_async { "await " } else { "" }
                ),
                Ending::Loop => format!(
                    "{head} it ends with a loop, which has no value. Collect what you need in a \
                     variable, and end with that variable alone on the last line."
                ),
                Ending::Other => {
                    format!("{head} end it with the value you need, alone on the last line.")
                }
            }
        }
    }
}

/// The warning for a program that ended while `running` tool calls it made were still running:
/// the host cancels them, and their results (and errors) are lost.
pub(crate) fn calls_still_running_warning(language: Language, running: usize) -> String {
    let (calls, they) = if running == 1 {
        ("1 tool call it made was".to_owned(), "it was")
    } else {
        (format!("{running} tool calls it made were"), "they were")
    };
    let how = match language {
        Language::JavaScript | Language::TypeScript => {
            "Await every call: `await Promise.all(items.map(...))`, or `for (const item of items) \
             await ...`; `forEach` with an async callback does not wait"
        }
        Language::Python => "Await every call, or `await asyncio.gather(...)` them",
    };
    format!(
        "the program ended while {calls} still running: {they} cancelled, and what came of \
         {calls_pronoun} is lost (a call may have taken effect). {how}.",
        calls_pronoun = if running == 1 { "it" } else { "them" }
    )
}

/// `code` with a markdown fence around it blanked out: when the first line that is not blank
/// opens a fence (```` ``` ```` or `~~~`, any info string such as `ts`) and the last one closes
/// it, both become spaces, so that the lines keep their numbers and the code its offsets.
pub(crate) fn without_fence(code: &str) -> Cow<'_, str> {
    let mut lines = code
        .split_inclusive('\n')
        .scan(0, |start, line| {
            let at = *start;
            *start += line.len();
            Some((at, line))
        })
        .filter(|(_, line)| !line.trim().is_empty());
    let Some((open_at, open)) = lines.next() else {
        return Cow::Borrowed(code);
    };
    let Some((close_at, close)) = lines.last() else {
        return Cow::Borrowed(code);
    };
    let open = open.trim();
    let close = close.trim();
    let fence = ["```", "~~~"]
        .into_iter()
        .find(|fence| open.starts_with(fence));
    let closes =
        fence.is_some_and(|fence| close.len() >= 3 && close.chars().all(|c| fence.starts_with(c)));
    if !closes {
        return Cow::Borrowed(code);
    }
    let mut blanked = code.to_owned();
    for at in [open_at, close_at] {
        let end = code[at..]
            .find('\n')
            .map_or(code.len(), |newline| at + newline);
        blanked.replace_range(at..end, &" ".repeat(end - at));
    }
    Cow::Owned(blanked)
}

/// The call that runs a Python program's entry function, to append to it, when the program
/// defines one and never calls it: its only statement is a function, or it defines `main` or
/// `run` at top level, never names it again, and does not end with an expression (which would
/// be its value). A function that needs arguments is not called.
pub(crate) fn python_entry_call(code: &str) -> Option<String> {
    // Only a program with a top-level `def` can have an entry function: the others are not
    // parsed twice.
    let defines = code
        .lines()
        .any(|line| line.starts_with("def ") || line.starts_with("async def "));
    if !defines {
        return None;
    }
    let parsed = ruff_python_parser::parse_module(code).ok()?;
    let body = &parsed.syntax().body;
    let entry = match body.as_slice() {
        [Stmt::FunctionDef(only)] => only,
        [.., Stmt::Expr(_)] => return None,
        _ => {
            let mut candidates = body.iter().filter_map(|statement| match statement {
                Stmt::FunctionDef(function) if matches!(function.name.as_str(), "main" | "run") => {
                    Some(function)
                }
                _ => None,
            });
            let entry = candidates.next()?;
            if candidates.next().is_some() || names_of(body).contains(&entry.name.as_str()) {
                return None;
            }
            entry
        }
    };
    let parameters = &entry.parameters;
    let needs_arguments = parameters
        .posonlyargs
        .iter()
        .chain(&parameters.args)
        .chain(&parameters.kwonlyargs)
        .any(|parameter| parameter.default.is_none());
    if needs_arguments {
        return None;
    }
    Some(format!(
        "{}{}()",
        if entry.is_async { "await " } else { "" },
        entry.name
    ))
}

/// Every name the statements read (not those they assign).
fn names_of(body: &[Stmt]) -> Vec<&str> {
    #[derive(Default)]
    struct Names<'a>(Vec<&'a str>);
    impl<'a> Visitor<'a> for Names<'a> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Name(name) = expr
                && name.ctx == ExprContext::Load
            {
                self.0.push(name.id.as_str());
            }
            walk_expr(self, expr);
        }
    }
    let mut names = Names::default();
    for statement in body {
        names.visit_stmt(statement);
    }
    names.0
}

/// What a Python program ends with, when that leaves it without a value.
pub(crate) fn python_ending(code: &str) -> Option<Ending> {
    let parsed = ruff_python_parser::parse_module(code).ok()?;
    let name = |target: &Expr| match target {
        Expr::Name(name) => Some(name.id.to_string()),
        _ => None,
    };
    Some(match parsed.syntax().body.last()? {
        Stmt::Expr(_) | Stmt::Return(_) | Stmt::Raise(_) => return None,
        Stmt::Assign(assign) => Ending::Declaration(assign.targets.last().and_then(name)),
        Stmt::AnnAssign(assign) => Ending::Declaration(name(&assign.target)),
        Stmt::AugAssign(assign) => Ending::Declaration(name(&assign.target)),
        Stmt::FunctionDef(function) => Ending::Function {
            name: function.name.to_string(),
            is_async: function.is_async,
        },
        Stmt::ClassDef(class) => Ending::Declaration(Some(class.name.to_string())),
        Stmt::For(_) | Stmt::While(_) => Ending::Loop,
        _ => Ending::Other,
    })
}

/// The widest line a code frame shows whole; a longer one is shown around the position.
const MAX_FRAME_LINE_CHARS: usize = 120;
/// Characters a long line keeps before the position.
const FRAME_CHARS_BEFORE: usize = 80;

/// The line `line` of `code` with a caret under `column` (1-based, in characters): `N | text`,
/// then the caret. A long line is shown around the position.
pub(crate) fn code_frame(code: &str, line: u32, column: u32) -> String {
    let line_text = code.lines().nth(line as usize - 1).unwrap_or_default();
    let (shown, caret) = window(line_text, column.saturating_sub(1) as usize);
    let gutter = format!("{line} | ");
    format!(
        "{gutter}{shown}\n{}^",
        " ".repeat(gutter.chars().count() + caret)
    )
}

/// `text` cut to [`MAX_FRAME_LINE_CHARS`] around the character at `position`, with `…` where it
/// was cut, and where that character is in what is shown.
pub(crate) fn window(text: &str, position: usize) -> (String, usize) {
    let characters: Vec<char> = text.chars().collect();
    if characters.len() <= MAX_FRAME_LINE_CHARS {
        return (text.to_owned(), position);
    }
    let start = position.saturating_sub(FRAME_CHARS_BEFORE);
    let end = (start + MAX_FRAME_LINE_CHARS).min(characters.len());
    let mut shown = String::new();
    let mut caret = position - start;
    if start > 0 {
        shown.push('…');
        caret += 1;
    }
    shown.extend(&characters[start..end]);
    if end < characters.len() {
        shown.push('…');
    }
    (shown, caret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_are_blanked_keeping_lines_and_offsets() {
        let code = "\n```ts\nconst a = 1;\na\n```\n\n";
        let blanked = without_fence(code);
        assert_eq!(blanked, "\n     \nconst a = 1;\na\n   \n\n");
        assert_eq!(blanked.len(), code.len());
        assert_eq!(
            without_fence("~~~python\nx = 1\n~~~~"),
            "         \nx = 1\n    "
        );
        // Not a fence around the code: left alone.
        for code in [
            "const a = '```';",
            "```ts\nno close",
            "a\n```",
            "```\n```ts",
        ] {
            assert_eq!(without_fence(code), code, "{code}");
        }
    }

    #[test]
    fn python_entry_functions_are_called_when_nothing_else_calls_them() {
        assert_eq!(
            python_entry_call("async def main():\n    return 1\n").as_deref(),
            Some("await main()")
        );
        assert_eq!(
            python_entry_call("def go(limit=3):\n    return limit\n").as_deref(),
            Some("go()")
        );
        assert_eq!(
            python_entry_call("x = 1\ndef run():\n    return x\ny = 2").as_deref(),
            Some("run()")
        );
        for code in [
            "async def main():\n    return 1\nawait main()",
            "async def main():\n    return 1\nasyncio.run(main())\nx = 1",
            "def main(a):\n    return a",
            "def helper():\n    return 1\nx = helper",
            "def main():\n    return 1\ndef run():\n    return 2\nx = 1",
            "x = 1",
        ] {
            assert_eq!(python_entry_call(code), None, "{code}");
        }
    }

    #[test]
    fn python_endings_without_a_value_are_named() {
        assert_eq!(
            python_ending("total = 1 + 2"),
            Some(Ending::Declaration(Some("total".to_owned())))
        );
        assert_eq!(python_ending("for x in []:\n    pass"), Some(Ending::Loop));
        assert_eq!(python_ending("total = 1\ntotal"), None);
    }
}
