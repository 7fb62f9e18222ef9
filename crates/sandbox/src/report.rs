//! Where a JavaScript error happened, told in the code as the model wrote it: the operation that
//! failed named from the source where QuickJS does not name it (`t.split is not a function`, not
//! `not a function`), the line with a caret under the position, and the calls inside the program
//! that led there.
//!
//! QuickJS records a stack of `at name (guest.js:line:column)` frames; positions in the script are
//! mapped back through the source map of `javascript/transpile.rs`, and the source is parsed again only when
//! an error needs a name for what failed.

use oxc::allocator::Allocator;
use oxc::ast::ast::{
    CallExpression, ComputedMemberExpression, Expression, NewExpression, StaticMemberExpression,
};
use oxc::ast_visit::Visit;
use oxc::ast_visit::walk::{
    walk_call_expression, walk_computed_member_expression, walk_new_expression,
    walk_static_member_expression,
};
use oxc::parser::{ParseOptions, Parser};
use oxc::span::{GetSpan, SourceType, Span};

use crate::Language;
use crate::javascript::transpile::{SCRIPT_NAME, Transpiled, offset_of};
use crate::program::{code_frame, window};

/// The longest source text an error message quotes for the operation that failed.
const MAX_QUOTED_CHARS: usize = 60;
/// Calls inside the program a report lists, innermost first; the outermost is always listed.
const MAX_LISTED_CALLS: usize = 6;

/// One frame of a stack that is in the guest's code, at a position in the code as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GuestFrame {
    /// The function QuickJS names, when it names one (`<anonymous>` is none).
    pub(crate) function: Option<String>,
    /// 1-based line in the code as written.
    pub(crate) line: u32,
    /// 1-based column.
    pub(crate) column: u32,
}

/// What a stack says about the guest's code: its frames there, innermost first, and whether the
/// innermost frame of all is one of them (the error was raised by the guest's own code, not
/// inside a built-in function or the host's prelude).
pub(crate) struct GuestStack {
    pub(crate) frames: Vec<GuestFrame>,
    pub(crate) raised_in_guest_code: bool,
}

/// The frames of `stack` in the guest's code, mapped to the code as written.
pub(crate) fn guest_stack(stack: &str, transpiled: &Transpiled) -> GuestStack {
    let marker = format!("({SCRIPT_NAME}:");
    let mut frames = Vec::new();
    let mut raised_in_guest_code = false;
    for (index, frame) in stack
        .lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
    {
        let Some(start) = frame.find(&marker) else {
            continue;
        };
        let Some((line, column)) = script_position(&frame[start + marker.len()..])
            .and_then(|(line, column)| transpiled.original_position(line, column))
        else {
            continue;
        };
        raised_in_guest_code |= index == 0;
        let function = frame
            .trim_start()
            .strip_prefix("at ")
            .map(|rest| rest[..rest.find(" (").unwrap_or(rest.len())].trim())
            .filter(|name| !name.is_empty() && *name != "<anonymous>" && *name != "<eval>")
            .map(str::to_owned);
        frames.push(GuestFrame {
            function,
            line,
            column,
        });
    }
    GuestStack {
        frames,
        raised_in_guest_code,
    }
}

/// `line:column` at the start of `text`.
fn script_position(text: &str) -> Option<(u32, u32)> {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == ':'))
        .unwrap_or(text.len());
    let mut numbers = text[..end].split(':');
    let line = numbers.next()?.parse().ok()?;
    let column = numbers.next().and_then(|c| c.parse().ok()).unwrap_or(1);
    Some((line, column))
}

/// QuickJS's message for an error its own code raised at `frame`, with what failed named from
/// the source: `t.split is not a function` for `not a function`, `cannot read property 'x' of
/// undefined (rows[0] is undefined)` for a property of nothing. Other messages stay as they are.
pub(crate) fn name_the_operation(
    code: &str,
    language: Language,
    message: &str,
    frame: &GuestFrame,
) -> Option<String> {
    let of_nothing = ["cannot read property '", "cannot set property '"]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix))
        .and_then(|rest| rest.split_once("' of "))
        .filter(|(_, nothing)| matches!(*nothing, "undefined" | "null"));
    if message != "not a function" && of_nothing.is_none() {
        return None;
    }
    let finder = operations(
        code,
        language,
        frame,
        of_nothing.map(|(property, _)| property),
    );
    match of_nothing {
        None => {
            let (callee, constructs) = finder.call?;
            let what = if constructs {
                "a constructor"
            } else {
                "a function"
            };
            Some(format!("{} is not {what}", quote(code, callee)))
        }
        Some((_, nothing)) => {
            let object = finder.member?;
            Some(format!("{message} ({} is {nothing})", quote(code, object)))
        }
    }
}

/// What a method of a string or an array read on a Promise throws (web.js), after `.name `: the
/// `await` left out.
pub(crate) const PROMISE_MISREAD: &str =
    "read on a Promise (a call or an async function that was not awaited): await it first";

/// The message for a method of a string or an array read on a Promise (`.split read on a
/// Promise ...`) at `frame`, with the value named from the source: `log is a Promise, ...`.
pub(crate) fn promise_misread(
    code: &str,
    language: Language,
    message: &str,
    frame: &GuestFrame,
) -> Option<String> {
    let property = message
        .strip_prefix('.')?
        .strip_suffix(PROMISE_MISREAD)?
        .trim_end();
    let object = operations(code, language, frame, Some(property)).member?;
    let object = quote(code, object);
    Some(format!(
        "{object} is a Promise, so it has no .{property}: a call or an async function that was \
         not awaited. Await it where it is made (const {} = await ...), or write (await \
         {object}).{property}",
        if object
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        {
            object.as_str()
        } else {
            "value"
        }
    ))
}

/// The operations of `code` around `frame`'s position (see [`Operations`]).
fn operations<'p>(
    code: &str,
    language: Language,
    frame: &GuestFrame,
    property: Option<&'p str>,
) -> Operations<'p> {
    let source_type = match language {
        Language::TypeScript => SourceType::ts().with_module(true),
        Language::JavaScript | Language::Python => SourceType::mjs(),
    };
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, code, source_type)
        .with_options(ParseOptions {
            allow_return_outside_function: true,
            ..ParseOptions::default()
        })
        .parse();
    let mut finder = Operations {
        offset: offset_of(code, frame.line, frame.column),
        property,
        call: None,
        member: None,
    };
    finder.visit_program(&parsed.program);
    finder
}

/// Finds, around an offset, the innermost call whose callee covers it and the innermost member
/// expression reading `property` that covers it.
struct Operations<'p> {
    offset: u32,
    property: Option<&'p str>,
    /// The callee's span, and whether the call is a `new`.
    call: Option<(Span, bool)>,
    /// The span of the object whose property could not be read.
    member: Option<Span>,
}

impl Operations<'_> {
    fn covers(&self, span: Span) -> bool {
        span.start <= self.offset && self.offset < span.end.max(span.start + 1)
    }

    /// The walk goes outside in, so a later match is an inner one.
    fn callee(&mut self, callee: &Expression<'_>, constructs: bool) {
        let span = callee.without_parentheses().span();
        if self.covers(span) {
            self.call = Some((span, constructs));
        }
    }

    fn member(&mut self, span: Span, object: Span, property: Option<&str>) {
        if self.covers(span) && (property.is_none() || property == self.property) {
            // A named property is a surer match than a computed one that covers the position.
            if property.is_some() || self.member.is_none() {
                self.member = Some(object);
            }
        }
    }
}

impl<'a> Visit<'a> for Operations<'_> {
    fn visit_call_expression(&mut self, call: &CallExpression<'a>) {
        self.callee(&call.callee, false);
        walk_call_expression(self, call);
    }

    fn visit_new_expression(&mut self, new: &NewExpression<'a>) {
        self.callee(&new.callee, true);
        walk_new_expression(self, new);
    }

    fn visit_static_member_expression(&mut self, member: &StaticMemberExpression<'a>) {
        // The object as written, without parentheses or a TypeScript `as` around it.
        self.member(
            member.span,
            member.object.get_inner_expression().span(),
            Some(member.property.name.as_str()),
        );
        walk_static_member_expression(self, member);
    }

    fn visit_computed_member_expression(&mut self, member: &ComputedMemberExpression<'a>) {
        self.member(member.span, member.object.span(), None);
        walk_computed_member_expression(self, member);
    }
}

/// The source text of `span` on one line, shortened in the middle when long.
fn quote(code: &str, span: Span) -> String {
    let text = code
        .get(span.start as usize..span.end as usize)
        .unwrap_or_default();
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let characters: Vec<char> = text.chars().collect();
    if characters.len() <= MAX_QUOTED_CHARS {
        return text;
    }
    let half = MAX_QUOTED_CHARS / 2;
    let head: String = characters[..half].iter().collect();
    let tail: String = characters[characters.len() - half..].iter().collect();
    format!("{head}…{tail}")
}

/// The report of an uncaught error: `head` (`TypeError: ...`), then each call inside the program
/// that led there, innermost first, the first with its line and a caret, the others with their
/// line of code.
pub(crate) fn traceback(code: &str, head: &str, frames: &[GuestFrame]) -> String {
    let mut text = head.to_owned();
    let listed: Vec<(usize, &GuestFrame)> = frames.iter().enumerate().collect();
    let shown = if listed.len() > MAX_LISTED_CALLS {
        let mut shown = listed[..MAX_LISTED_CALLS - 1].to_vec();
        shown.extend(listed.last().copied());
        shown
    } else {
        listed
    };
    for (position, (index, frame)) in shown.iter().enumerate() {
        if position > 0 && shown[position - 1].0 + 1 != *index {
            text.push_str(&format!(
                "\n    … {} more calls",
                index - shown[position - 1].0 - 1
            ));
        }
        let at = format!("line {}, column {}", frame.line, frame.column);
        let at = match &frame.function {
            Some(function) => format!("{function} ({at})"),
            None => at,
        };
        if *index == 0 {
            text.push_str(&format!("\n    at {at}:\n"));
            let frame = code_frame(code, frame.line, frame.column);
            for line in frame.lines() {
                text.push_str("      ");
                text.push_str(line);
                text.push('\n');
            }
            text.pop();
        } else {
            let source = code
                .lines()
                .nth(frame.line as usize - 1)
                .unwrap_or_default()
                .trim();
            let source = window(source, 0).0;
            text.push_str(&format!("\n    at {at}: {source}"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(line: u32, column: u32) -> GuestFrame {
        GuestFrame {
            function: None,
            line,
            column,
        }
    }

    #[test]
    fn operations_are_named_from_the_source() {
        let named = |code: &str, message: &str, line, column| {
            name_the_operation(code, Language::JavaScript, message, &frame(line, column))
        };
        assert_eq!(
            named("const x = t.split(',');", "not a function", 1, 13).as_deref(),
            Some("t.split is not a function")
        );
        assert_eq!(
            named("f(g(1))", "not a function", 1, 3).as_deref(),
            Some("g is not a function")
        );
        assert_eq!(
            named("const F = 5; new F()", "not a function", 1, 18).as_deref(),
            Some("F is not a constructor")
        );
        assert_eq!(
            named("o.x.y.z", "cannot read property 'y' of undefined", 1, 1).as_deref(),
            Some("cannot read property 'y' of undefined (o.x is undefined)")
        );
        assert_eq!(
            named("rows[0].name", "cannot read property 'name' of null", 1, 1).as_deref(),
            Some("cannot read property 'name' of null (rows[0] is null)")
        );
        // Other messages, and positions that name nothing, are left alone.
        assert_eq!(named("x", "x is not defined", 1, 1), None);
        assert_eq!(named("let a = 1;", "not a function", 1, 1), None);
    }

    #[test]
    fn long_lines_are_framed_around_the_position() {
        let line = format!("{}BAD{}", "a".repeat(200), "b".repeat(200));
        let frame = code_frame(&line, 1, 201);
        let (text, caret) = frame.split_once('\n').unwrap();
        assert!(text.starts_with("1 | …"), "{text}");
        assert!(text.ends_with('…'), "{text}");
        assert_eq!(text.chars().nth(caret.chars().count() - 1), Some('B'));
        assert_eq!(code_frame("ab\ncd", 2, 2), "2 | cd\n     ^");
    }

    #[test]
    fn tracebacks_list_the_calls_innermost_first() {
        let code = "function check(r) {\n  throw new Error('no');\n}\ncheck([]);";
        let frames = [
            GuestFrame {
                function: Some("check".to_owned()),
                line: 2,
                column: 3,
            },
            frame(4, 1),
        ];
        assert_eq!(
            traceback(code, "Error: no", &frames),
            "Error: no\n    at check (line 2, column 3):\n      2 |   throw new Error('no');\n      \
             \x20     ^\n    at line 4, column 1: check([]);"
        );
    }
}
