//! Guest source → a script QuickJS runs, with a source map back to what the model wrote.
//!
//! The program is parsed as a module that may `return` at top level (so top-level `await`
//! works), TypeScript types are stripped, and the last top-level expression statement becomes a
//! `return`, so its value is the result. The body is then wrapped in an async function
//! expression: evaluating the script compiles the program and runs none of it, so whatever goes
//! wrong then is the compiler's finding, not something the guest threw.
//!
//! QuickJS's compiler recurses once per level of nesting, on the guest's stack, and past that
//! stack it reports confusing errors ("missing formal parameter" for arrow functions nested a
//! thousand deep). So `transpile` measures how deeply expressions, statements and patterns nest,
//! and [`check_nesting`] refuses a program nested deeper than the stack allows, at the position
//! where it goes too deep, before QuickJS sees it.
//!
//! oxc is a large compiler of its own, and a bug in it may panic. [`transpile`] turns such a panic
//! into an [`EngineError::Internal`] before anything else sees it: no QuickJS runtime is running
//! while oxc works, and none is ever unwound through.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use oxc::allocator::{Allocator, TakeIn};
use oxc::ast::ast::{
    AssignmentTarget, BinaryExpression, BindingPattern, CallExpression, ComputedMemberExpression,
    Decorator, Expression, IdentifierReference, LogicalExpression, PrivateFieldExpression, Program,
    Statement, StaticMemberExpression, TaggedTemplateExpression,
};
use oxc::ast::builder::AstBuilder;
use oxc::ast_visit::Visit;
use oxc::ast_visit::walk::{
    walk_assignment_target, walk_binding_pattern, walk_expression, walk_statement,
};
use oxc::codegen::{Codegen, CodegenOptions, CommentOptions};
use oxc::parser::{ParseOptions, Parser};
use oxc::semantic::SemanticBuilder;
use oxc::span::{GetSpan, SourceType, Span};
use oxc::transformer::{TransformOptions, Transformer};

use crate::program::{Ending, without_fence};
use crate::{EngineError, Language};

/// The file name QuickJS reports in stacks; positions in it are mapped back.
pub(crate) const SCRIPT_NAME: &str = "guest.js";
/// Lines the wrapper adds before the body.
const WRAPPER_LINES: u32 = 1;
/// How much of a decorator's source a syntax error quotes.
const MAX_QUOTED_CHARS: usize = 60;
/// The most levels of expressions, statements and patterns inside one another a program may
/// have, whatever its stack. No program a person writes comes near; it also keeps every program
/// inside the 255 levels of brackets QuickJS follows to tell an arrow function's parameters from
/// a parenthesized expression.
const MAX_NESTING: usize = 250;
/// Stack QuickJS's compiler may take per level of nesting. The costliest level measured, a
/// template literal inside a template literal's `${}`, takes about 2 KiB with QuickJS compiled
/// optimized, as it is in every build (tests included); a function inside another takes two
/// levels (itself and the statement of its body it is in), at about 1 KiB each.
const STACK_BYTES_PER_NESTING_LEVEL: usize = 2048;
/// Stack QuickJS's compiler takes before the first level: its own entry and the frames above it.
const NESTING_BASE_BYTES: usize = 8 * 1024;

/// A program ready to evaluate.
#[derive(Debug)]
pub(crate) struct Transpiled {
    /// The wrapped script; evaluating it yields an async function whose call runs the program.
    pub(crate) script: String,
    map: Option<oxc_sourcemap::SourceMap<'static>>,
    /// Where, in the code as written, the program first reaches each level of nesting: the byte
    /// offset of the first node at level `n + 1` is at `n`. Measured up to one level past
    /// [`MAX_NESTING`].
    first_at_level: Vec<u32>,
    /// What the program ends with when that gives it no value (a declaration, a loop): the
    /// warning a program that returned nothing gets says so.
    pub(crate) ending: Option<Ending>,
}

impl Transpiled {
    /// Maps a 1-based position in `script` to a 1-based position in the submitted code.
    pub(crate) fn original_position(&self, line: u32, column: u32) -> Option<(u32, u32)> {
        let line = line.checked_sub(1 + WRAPPER_LINES)?;
        let column = column.saturating_sub(1);
        let map = self.map.as_ref()?;
        let table = map.generate_lookup_table();
        let token = map
            .lookup_token(&table, line, column)
            .or_else(|| map.lookup_token_approx(&table, line, column))?;
        Some((token.get_src_line() + 1, token.get_src_col() + 1))
    }
}

/// Parses, strips and wraps one program. A panic inside oxc comes back as an internal error.
pub(crate) fn transpile(code: &str, language: Language) -> Result<Transpiled, EngineError> {
    if code.len() > crate::MAX_CODE_BYTES {
        return Err(EngineError::CodeTooLarge {
            size: code.len(),
            limit: crate::MAX_CODE_BYTES,
        });
    }
    // A fence is blanked, not removed: positions in the code stay the model's.
    let code = &*without_fence(code);
    // Unwind safety: everything the closure builds (the arena, the AST, the generated code) is
    // dropped with it, and it only reads `code`; nothing half-updated outlives a panic.
    catch_unwind(AssertUnwindSafe(|| transpile_unguarded(code, language))).unwrap_or_else(|panic| {
        Err(EngineError::Internal {
            message: format!(
                "the {} compiler (oxc) failed on this program: it panicked with \"{}\"",
                match language {
                    Language::TypeScript => "TypeScript",
                    Language::JavaScript | Language::Python => "JavaScript",
                },
                crate::panic_message(panic.as_ref())
            ),
        })
    })
}

/// Where a runtime's programs are compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compiler {
    /// On the thread that runs them, whose stack has [`crate::THREAD_STACK_HEADROOM`] to spare
    /// (a worker process's main thread).
    ThisThread,
    /// On the one compiler thread of the process, which has that headroom: the gateway's engine
    /// threads then need only a little beyond the guest's stack, so dozens of executions at once
    /// do not reserve half a gigabyte of address space each.
    Shared,
}

impl Compiler {
    /// Transpiles `code` where this says.
    pub(crate) fn transpile(
        self,
        code: &str,
        language: Language,
    ) -> Result<Transpiled, EngineError> {
        match self {
            Self::ThisThread => transpile(code, language),
            Self::Shared => compile_elsewhere(code, language),
        }
    }
}

/// A program for the compiler thread, and where its outcome goes.
type CompileJob = (
    String,
    Language,
    std::sync::mpsc::SyncSender<Result<Transpiled, EngineError>>,
);

/// Transpiles on the process's compiler thread, started on first use. Programs are compiled one
/// at a time: the largest takes milliseconds, and a queue costs far less address space than a
/// big stack per engine thread.
fn compile_elsewhere(code: &str, language: Language) -> Result<Transpiled, EngineError> {
    static COMPILER: std::sync::OnceLock<
        Result<std::sync::Mutex<std::sync::mpsc::Sender<CompileJob>>, String>,
    > = std::sync::OnceLock::new();
    let compiler = COMPILER.get_or_init(|| {
        let (jobs, queue) = std::sync::mpsc::channel::<CompileJob>();
        std::thread::Builder::new()
            .name("toolweave-compile".to_owned())
            .stack_size(crate::THREAD_STACK_HEADROOM)
            .spawn(move || {
                for (code, language, outcome) in queue {
                    // The engine thread that asked may be gone (its execution was cancelled).
                    let _ = outcome.send(transpile(&code, language));
                }
            })
            .map(|_| std::sync::Mutex::new(jobs))
            .map_err(|error| error.to_string())
    });
    let unavailable = |why: &str| EngineError::Internal {
        message: format!("the JavaScript compiler thread is not available: {why}"),
    };
    let jobs = compiler.as_ref().map_err(|why| unavailable(why))?;
    let (outcome, answer) = std::sync::mpsc::sync_channel(1);
    jobs.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .send((code.to_owned(), language, outcome))
        .map_err(|_| unavailable("it has stopped"))?;
    answer
        .recv()
        .map_err(|_| unavailable("it stopped while compiling"))?
}

/// Refuses value imports and exports, which have no meaning here; type-only ones are stripped
/// with the types.
fn refuse_modules(code: &str, program: &Program<'_>) -> Result<(), EngineError> {
    for statement in &program.body {
        let is_import = match statement {
            Statement::ImportDeclaration(import) if import.import_kind.is_type() => continue,
            Statement::ImportDeclaration(_) => true,
            Statement::ExportNamedDeclaration(export) if export.export_kind.is_type() => continue,
            Statement::ExportFromDeclaration(export) if export.export_kind.is_type() => continue,
            Statement::ExportDeclaration(export)
                if export.declaration.is_type() || export.declaration.is_typescript_syntax() =>
            {
                continue;
            }
            Statement::ExportNamedDeclaration(_)
            | Statement::ExportFromDeclaration(_)
            | Statement::ExportDeclaration(_)
            | Statement::ExportDefaultDeclaration(_)
            | Statement::ExportAllDeclaration(_)
            | Statement::TSExportAssignment(_)
            | Statement::TSNamespaceExportDeclaration(_) => false,
            _ => continue,
        };
        let message = if is_import {
            "`import` is not available in toolweave code: there are no modules, no network and no file system here; the only way out of the sandbox is a tool call, `tools.<server>.<tool>()` (`searchTools(\"what you need\")` finds one)"
        } else {
            "`export` is not available in toolweave code; `return` the value instead"
        };
        return Err(syntax_error(code, statement.span().start, message));
    }
    Ok(())
}

/// Lowers TypeScript to JavaScript in place: types stripped, enums lowered.
fn strip_types<'a>(
    code: &str,
    allocator: &'a Allocator,
    path: &Path,
    program: &mut Program<'a>,
) -> Result<(), EngineError> {
    // Enum lowering reads member values the semantic pass computes only when asked to.
    let scoping = SemanticBuilder::new()
        .with_enum_eval(true)
        .build(program)
        .semantic
        .into_scoping();
    let options = TransformOptions::default();
    let transformed =
        Transformer::new(allocator, path, &options).build_with_scoping(scoping, program);
    if let Some(error) = transformed.diagnostics.errors().next() {
        let offset = error.labels.first().map_or(0, |label| label.offset());
        return Err(syntax_error(code, offset, &error.message));
    }
    // Removing `import type` leaves an `export {}` behind to keep module semantics.
    program.body.retain(|statement| {
        !matches!(statement, Statement::ExportNamedDeclaration(export)
            if export.specifiers.is_empty())
    });
    Ok(())
}

fn transpile_unguarded(code: &str, language: Language) -> Result<Transpiled, EngineError> {
    let allocator = Allocator::default();
    let (source_type, path) = match language {
        Language::TypeScript => (SourceType::ts().with_module(true), Path::new("guest.ts")),
        Language::JavaScript => (SourceType::mjs(), Path::new("guest.js")),
        Language::Python => {
            return Err(EngineError::Internal {
                message: "a Python program reached the JavaScript engine".to_owned(),
            });
        }
    };
    let parsed = Parser::new(&allocator, code, source_type)
        .with_options(ParseOptions {
            allow_return_outside_function: true,
            ..ParseOptions::default()
        })
        .parse();
    if let Some(diagnostic) = parsed.diagnostics.errors().next() {
        let offset = diagnostic.labels.first().map_or(0, |label| label.offset());
        return Err(syntax_error(code, offset, &diagnostic.message));
    }
    if parsed.panicked {
        return Err(syntax_error(code, 0, "the program could not be parsed"));
    }
    let mut program = parsed.program;

    refuse_modules(code, &program)?;

    // oxc parses decorators (TypeScript's and the JavaScript proposal) and leaves them in place;
    // QuickJS has none, and would reject them only once the program runs.
    if let Some(span) = first_decorator(&program) {
        return Err(syntax_error(
            code,
            span.start,
            &decorator_message(code, span),
        ));
    }

    if language == Language::TypeScript {
        strip_types(code, &allocator, path, &mut program)?;
    }

    let builder = AstBuilder::new(&allocator);
    call_entry_function(&mut program, &allocator, &builder);
    let ending = program.body.last().and_then(ending_of);
    if let Some(last) = program.body.last_mut() {
        return_completion_value(last, &allocator, &builder);
    } else if let Some(directive) = program.directives.pop() {
        // A program that is only a string literal parses as a directive: its value is the string.
        let span: Span = directive.span;
        let literal = Expression::StringLiteral(oxc::allocator::Box::new_in(
            directive.expression,
            &&allocator,
        ));
        program.body.push(Statement::new_return_statement(
            span,
            Some(literal),
            &builder,
        ));
    }

    let first_at_level = nesting_levels(&program);
    let generated = Codegen::new()
        .with_options(CodegenOptions {
            source_map_path: Some(path.to_path_buf()),
            comments: CommentOptions::disabled(),
            ..CodegenOptions::default()
        })
        .build(&program);
    let script = format!("(async () => {{\n{}\n}})", generated.code);
    Ok(Transpiled {
        script,
        map: generated.map.map(oxc_sourcemap::SourceMap::into_owned),
        first_at_level,
        ending,
    })
}

/// Calls the program's entry function when it defines one and never calls it: a program that is
/// one function (`async () => { ... }`, or one function declaration) is called, and so is a
/// `main` or `run` defined at top level and named nowhere else, when nothing after it gives the
/// program a value. The call's value is the program's.
fn call_entry_function<'a>(
    program: &mut Program<'a>,
    allocator: &'a Allocator,
    builder: &AstBuilder<'a>,
) {
    let call = |callee: Expression<'a>, span: Span| {
        let call = Expression::new_call_expression(
            span,
            callee,
            None,
            oxc::allocator::Vec::new_in(&allocator),
            false,
            builder,
        );
        Statement::new_return_statement(
            span,
            Some(Expression::new_await_expression(span, call, builder)),
            builder,
        )
    };
    if let [Statement::ExpressionStatement(only)] = program.body.as_mut_slice()
        && matches!(
            only.expression.without_parentheses(),
            Expression::ArrowFunctionExpression(_) | Expression::FunctionExpression(_)
        )
    {
        let span = only.span;
        let function = only.expression.take_in(&allocator);
        program.body[0] = call(function, span);
        return;
    }
    if let [Statement::FunctionDeclaration(only)] = program.body.as_slice()
        && let Some(id) = &only.id
    {
        let (name, span) = (id.name, only.span);
        program
            .body
            .push(call(Expression::new_identifier(span, name, builder), span));
        return;
    }
    let gives_a_value = program
        .body
        .iter()
        .any(|statement| matches!(statement, Statement::ReturnStatement(_)))
        || matches!(program.body.last(), Some(Statement::ExpressionStatement(_)));
    if gives_a_value {
        return;
    }
    let mut entries = program.body.iter().filter_map(|statement| {
        let (name, span) = match statement {
            Statement::FunctionDeclaration(function) => {
                let id = function.id.as_ref()?;
                (id.name, function.span)
            }
            Statement::VariableDeclaration(declaration) => {
                match declaration.declarations.as_slice() {
                    [declarator]
                        if declarator.init.as_ref().is_some_and(|init| {
                            matches!(
                                init.without_parentheses(),
                                Expression::ArrowFunctionExpression(_)
                                    | Expression::FunctionExpression(_)
                            )
                        }) =>
                    {
                        (declarator.id.get_identifier_name()?, declaration.span)
                    }
                    _ => return None,
                }
            }
            _ => return None,
        };
        matches!(name.as_str(), "main" | "run").then_some((name, span))
    });
    let (Some((name, span)), None) = (entries.next(), entries.next()) else {
        return;
    };
    if names_read(program).contains(&name.as_str()) {
        return;
    }
    program
        .body
        .push(call(Expression::new_identifier(span, name, builder), span));
}

/// Every name the program reads.
fn names_read<'a>(program: &Program<'a>) -> Vec<&'a str> {
    #[derive(Default)]
    struct Names<'a>(Vec<&'a str>);
    impl<'a> Visit<'a> for Names<'a> {
        fn visit_identifier_reference(&mut self, reference: &IdentifierReference<'a>) {
            self.0.push(reference.name.as_str());
        }
    }
    let mut names = Names::default();
    names.visit_program(program);
    names.0
}

/// What a program's last statement is when it gives the program no value.
fn ending_of(statement: &Statement<'_>) -> Option<Ending> {
    Some(match statement {
        Statement::ExpressionStatement(_)
        | Statement::ReturnStatement(_)
        | Statement::ThrowStatement(_)
        // The value of each branch is returned (see `return_completion_value`).
        | Statement::IfStatement(_)
        | Statement::BlockStatement(_)
        | Statement::TryStatement(_) => return None,
        Statement::VariableDeclaration(declaration) => Ending::Declaration(
            declaration
                .declarations
                .last()
                .and_then(|declarator| declarator.id.get_identifier_name())
                .map(|name| name.to_string()),
        ),
        Statement::FunctionDeclaration(function) => match &function.id {
            Some(id) => Ending::Function {
                name: id.name.to_string(),
                is_async: function.r#async,
            },
            None => Ending::Other,
        },
        Statement::ClassDeclaration(class) => {
            Ending::Declaration(class.id.as_ref().map(|id| id.name.to_string()))
        }
        Statement::ForStatement(_)
        | Statement::ForInStatement(_)
        | Statement::ForOfStatement(_)
        | Statement::WhileStatement(_)
        | Statement::DoWhileStatement(_) => Ending::Loop,
        _ => Ending::Other,
    })
}

/// How many levels of nesting a program may have with a stack of `stack_bytes`.
fn max_nesting(stack_bytes: usize) -> usize {
    (stack_bytes.saturating_sub(NESTING_BASE_BYTES) / STACK_BYTES_PER_NESTING_LEVEL)
        .clamp(1, MAX_NESTING)
}

/// Refuses a program that nests deeper than [`max_nesting`] allows for `stack_bytes`, with the
/// position where it first goes too deep.
pub(crate) fn check_nesting(
    code: &str,
    transpiled: &Transpiled,
    stack_bytes: usize,
) -> Result<(), EngineError> {
    let levels = max_nesting(stack_bytes);
    let Some(&offset) = transpiled.first_at_level.get(levels) else {
        return Ok(());
    };
    let limit = if levels == MAX_NESTING {
        String::new()
    } else {
        format!(
            " (the limit for the {} KiB stack, --stack-kb)",
            stack_bytes / 1024
        )
    };
    Err(syntax_error(
        code,
        offset,
        &format!(
            "the program nests too deeply here: more than {levels} levels of expressions and \
             statements inside one another{limit}. Split it up: give inner parts names, or build \
             deeply nested data in a loop"
        ),
    ))
}

/// The walk of [`nesting_levels`]: how deep it is, and where each level was first reached.
struct Levels {
    depth: usize,
    /// The start of the innermost node with a position in the code as written (nodes the
    /// TypeScript transform made have none).
    position: u32,
    first_at_level: Vec<u32>,
}
impl Levels {
    fn nested(&mut self, span: Span, walk: impl FnOnce(&mut Self)) {
        let outer = self.position;
        if !span.is_unspanned() {
            self.position = span.start;
        }
        self.depth += 1;
        if self.first_at_level.len() < self.depth {
            self.first_at_level.push(self.position);
        }
        // A node one level past the most any limit allows is recorded; the walk goes no deeper.
        if self.depth <= MAX_NESTING {
            walk(self);
        }
        self.depth -= 1;
        self.position = outer;
    }
}
impl<'a> Visit<'a> for Levels {
    fn visit_expression(&mut self, expression: &Expression<'a>) {
        if matches!(expression, Expression::ParenthesizedExpression(_)) {
            walk_expression(self, expression);
        } else {
            self.nested(expression.span(), |levels| {
                walk_expression(levels, expression);
            });
        }
    }
    fn visit_statement(&mut self, statement: &Statement<'a>) {
        self.nested(statement.span(), |levels| walk_statement(levels, statement));
    }
    fn visit_binding_pattern(&mut self, pattern: &BindingPattern<'a>) {
        self.nested(pattern.span(), |levels| {
            walk_binding_pattern(levels, pattern)
        });
    }
    fn visit_assignment_target(&mut self, target: &AssignmentTarget<'a>) {
        self.nested(target.span(), |levels| {
            walk_assignment_target(levels, target);
        });
    }
    fn visit_binary_expression(&mut self, binary: &BinaryExpression<'a>) {
        self.visit_chained(&binary.left);
        self.visit_expression(&binary.right);
    }
    fn visit_logical_expression(&mut self, logical: &LogicalExpression<'a>) {
        self.visit_chained(&logical.left);
        self.visit_expression(&logical.right);
    }
    fn visit_static_member_expression(&mut self, member: &StaticMemberExpression<'a>) {
        self.visit_chained(&member.object);
    }
    fn visit_computed_member_expression(&mut self, member: &ComputedMemberExpression<'a>) {
        self.visit_chained(&member.object);
        self.visit_expression(&member.expression);
    }
    fn visit_private_field_expression(&mut self, member: &PrivateFieldExpression<'a>) {
        self.visit_chained(&member.object);
    }
    fn visit_call_expression(&mut self, call: &CallExpression<'a>) {
        self.visit_chained(&call.callee);
        for argument in &call.arguments {
            self.visit_argument(argument);
        }
    }
    fn visit_tagged_template_expression(&mut self, tagged: &TaggedTemplateExpression<'a>) {
        self.visit_chained(&tagged.tag);
        self.visit_template_literal(&tagged.quasi);
    }
}
impl<'a> Levels {
    /// The link of a chain that QuickJS reads in the same loop as the expression it belongs
    /// to: no level of its own, unless parentheses make it one.
    fn visit_chained(&mut self, expression: &Expression<'a>) {
        if matches!(expression, Expression::ParenthesizedExpression(_)) {
            self.visit_expression(expression);
        } else {
            walk_expression(self, expression);
        }
    }
}

/// Where the program first reaches each level of nesting (see [`Transpiled::first_at_level`]).
/// Expressions, statements and binding and assignment patterns count, as QuickJS's compiler
/// recurses into each; parentheses do not, since the generated code drops those it does not need.
/// Nor do chains QuickJS reads in a loop: `a + b + c`, `a.b().c()`, `f()()` are one level, not
/// one per link.
fn nesting_levels(program: &Program<'_>) -> Vec<u32> {
    let mut levels = Levels {
        depth: 0,
        position: 0,
        first_at_level: Vec::new(),
    };
    levels.visit_program(program);
    levels.first_at_level
}

/// Makes the value the statement would leave behind as a script's last statement the function's
/// return value: an expression statement becomes a `return`, and the same happens to the last
/// statement of each branch of an `if`, a block, and a `try`/`catch` (not `finally`, whose value
/// a script never takes), so `try { await f() } catch (e) { e.message }` yields the message.
fn return_completion_value<'a>(
    statement: &mut Statement<'a>,
    allocator: &'a Allocator,
    builder: &AstBuilder<'a>,
) {
    match statement {
        Statement::ExpressionStatement(_) => {
            let Statement::ExpressionStatement(expression) = statement.take_in(&allocator) else {
                return;
            };
            let expression = expression.unbox();
            *statement = Statement::new_return_statement(
                expression.span,
                Some(expression.expression),
                builder,
            );
        }
        Statement::BlockStatement(block) => {
            if let Some(last) = block.body.last_mut() {
                return_completion_value(last, allocator, builder);
            }
        }
        Statement::IfStatement(branches) => {
            return_completion_value(&mut branches.consequent, allocator, builder);
            if let Some(alternate) = &mut branches.alternate {
                return_completion_value(alternate, allocator, builder);
            }
        }
        Statement::TryStatement(attempt) => {
            if let Some(last) = attempt.block.body.last_mut() {
                return_completion_value(last, allocator, builder);
            }
            if let Some(last) = attempt
                .handler
                .as_mut()
                .and_then(|handler| handler.body.body.last_mut())
            {
                return_completion_value(last, allocator, builder);
            }
        }
        _ => {}
    }
}

/// Where the first decorator in the program is, if it has one.
fn first_decorator(program: &Program<'_>) -> Option<Span> {
    #[derive(Default)]
    struct FirstDecorator(Option<Span>);
    impl<'a> Visit<'a> for FirstDecorator {
        fn visit_decorator(&mut self, decorator: &Decorator<'a>) {
            if self
                .0
                .is_none_or(|first| decorator.span.start < first.start)
            {
                self.0 = Some(decorator.span);
            }
        }
    }
    let mut finder = FirstDecorator::default();
    finder.visit_program(program);
    finder.0
}

/// Why a decorator is refused, quoting it (its first line, shortened).
fn decorator_message(code: &str, span: Span) -> String {
    let source = code
        .get(span.start as usize..span.end as usize)
        .unwrap_or("@")
        .lines()
        .next()
        .unwrap_or("@");
    let mut quoted: String = source.chars().take(MAX_QUOTED_CHARS).collect();
    if quoted.len() < source.len() {
        quoted.push('…');
    }
    format!(
        "decorators ('@') are not supported in toolweave code: `{quoted}` cannot be applied; \
         call the function on the class or method yourself instead"
    )
}

/// A syntax error at a byte offset, with a one-line code frame.
fn syntax_error(code: &str, offset: u32, message: &str) -> EngineError {
    let offset = (offset as usize).min(code.len());
    let before = &code[..code.floor_char_boundary(offset)];
    let line = before.matches('\n').count() as u32 + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() as u32 + 1;
    EngineError::Syntax {
        message: message.to_owned(),
        line,
        column,
        frame: crate::program::code_frame(code, line, column),
    }
}

/// A syntax error QuickJS found in the script at a 1-based position, mapped to the code as
/// written when the position maps (else at the program's start).
pub(crate) fn compile_error(
    code: &str,
    transpiled: &Transpiled,
    script_position: Option<(u32, u32)>,
    message: &str,
) -> EngineError {
    let offset = script_position
        .and_then(|(line, column)| transpiled.original_position(line, column))
        .map_or(0, |(line, column)| offset_of(code, line, column));
    syntax_error(code, offset, message)
}

/// The byte offset of a 1-based line and column (in characters), clamped to the code.
pub(crate) fn offset_of(code: &str, line: u32, column: u32) -> u32 {
    let mut start = 0;
    for _ in 1..line {
        match code[start..].find('\n') {
            Some(newline) => start += newline + 1,
            None => break,
        }
    }
    let line_text = code[start..].split('\n').next().unwrap_or_default();
    let in_line = line_text
        .char_indices()
        .nth(column.saturating_sub(1) as usize)
        .map_or(line_text.len(), |(index, _)| index);
    u32::try_from(start + in_line).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(code: &str, language: Language) -> String {
        let script = transpile(code, language).unwrap().script;
        script
            .strip_prefix("(async () => {\n")
            .and_then(|s| s.strip_suffix("\n})"))
            .unwrap()
            .trim()
            .to_owned()
    }

    #[test]
    fn last_expression_becomes_the_return() {
        assert_eq!(
            body("const a = 1;\na + 1", Language::JavaScript),
            "const a = 1;\nreturn a + 1;"
        );
        assert_eq!(body("return 5", Language::JavaScript), "return 5;");
        assert_eq!(body("let x = 1;", Language::JavaScript), "let x = 1;");
        assert_eq!(body("'hello'", Language::JavaScript), "return \"hello\";");
        assert_eq!(
            body("try { f() } catch (e) { e.message }", Language::JavaScript),
            "try {\n\treturn f();\n} catch (e) {\n\treturn e.message;\n}"
        );
        assert_eq!(
            body("if (a) { 1 } else 2", Language::JavaScript),
            "if (a) {\n\treturn 1;\n} else return 2;"
        );
    }

    #[test]
    fn types_are_stripped() {
        let out = body(
            "import type { A } from './a';\ninterface P { x: number }\nconst p: P = { x: 1 } as P;\np.x",
            Language::TypeScript,
        );
        assert_eq!(out, "const p = { x: 1 };\nreturn p.x;");
    }

    #[test]
    fn enums_and_namespaces_are_lowered() {
        let out = body(
            "enum E { A, B = 'b' }\nconst enum F { X = 1 << 2 }\nnamespace N { export const n = F.X }\nE.A",
            Language::TypeScript,
        );
        assert!(out.contains("E[E[\"A\"] = 0] = \"A\""), "{out}");
        assert!(out.contains("E[\"B\"] = \"b\""), "{out}");
        assert!(!out.contains("enum"), "{out}");
        assert!(out.ends_with("return E.A;"), "{out}");
    }

    #[test]
    fn decorators_are_refused_where_they_are() {
        for (code, language, line, column) in [
            (
                "const a = 1;\n@sealed class A {}",
                Language::TypeScript,
                2,
                1,
            ),
            (
                "class A {\n  @log('x') m() {}\n}",
                Language::JavaScript,
                2,
                3,
            ),
            (
                "class A { constructor(@inject x) {} }",
                Language::TypeScript,
                1,
                23,
            ),
        ] {
            let Err(EngineError::Syntax {
                line: at_line,
                column: at_column,
                message,
                ..
            }) = transpile(code, language)
            else {
                panic!("{code}");
            };
            assert_eq!((at_line, at_column), (line, column), "{code}: {message}");
            assert!(message.contains("decorators ('@')"), "{message}");
        }
        let Err(EngineError::Syntax { message, .. }) = transpile(
            &format!("@{}\nclass A {{}}", "x".repeat(200)),
            Language::JavaScript,
        ) else {
            panic!();
        };
        assert!(
            message.contains(&format!("`@{}…`", "x".repeat(59))),
            "{message}"
        );
    }

    #[test]
    fn compiler_positions_map_to_the_code_as_written() {
        let code = "interface A { x: number }\nconst a: A = { x: 1 };\nlet b = 1;\nlet b = 2;";
        let transpiled = transpile(code, Language::TypeScript).unwrap();
        let (line, text) = transpiled
            .script
            .lines()
            .enumerate()
            .filter(|(_, text)| text.contains("let b"))
            .last()
            .unwrap();
        let column = text.find("b =").unwrap() as u32 + 1;
        let EngineError::Syntax {
            line,
            column,
            frame,
            ..
        } = compile_error(
            code,
            &transpiled,
            Some((line as u32 + 1, column)),
            "redefined",
        )
        else {
            panic!();
        };
        assert_eq!((line, column), (4, 5));
        assert!(frame.starts_with("4 | let b = 2;\n"), "{frame}");
        // Without a position that maps, the error points at the start.
        let error = compile_error(code, &transpiled, None, "too deep");
        assert!(matches!(
            error,
            EngineError::Syntax {
                line: 1,
                column: 1,
                ..
            }
        ));
        assert_eq!(offset_of("ab\ncd", 2, 9), 5);
        assert_eq!(offset_of("ab\ncd", 9, 1), 3);
        assert_eq!(offset_of("é\nx", 1, 2), 2);
    }

    #[test]
    fn imports_and_syntax_errors_are_reported_with_position() {
        let error =
            transpile("const a = 1;\nimport x from 'fs';", Language::JavaScript).unwrap_err();
        let EngineError::Syntax {
            line,
            column,
            message,
            ..
        } = error
        else {
            panic!()
        };
        assert_eq!((line, column), (2, 1));
        assert!(message.contains("`import` is not available"));
        let error =
            transpile("const ok = 1;\nconst broken = (;", Language::TypeScript).unwrap_err();
        let EngineError::Syntax { line, frame, .. } = error else {
            panic!()
        };
        assert_eq!(line, 2);
        assert!(frame.starts_with("2 | const broken = (;\n"), "{frame}");
    }

    #[test]
    fn positions_map_back_through_type_stripping() {
        let code = "interface A {\n  x: number;\n}\nconst a: A = { x: 1 };\nthrow new Error('x');";
        let transpiled = transpile(code, Language::TypeScript).unwrap();
        // The throw is on line 2 of the body, line 3 of the script.
        let line = transpiled
            .script
            .lines()
            .position(|l| l.contains("throw"))
            .unwrap() as u32
            + 1;
        let column = transpiled
            .script
            .lines()
            .nth(line as usize - 1)
            .unwrap()
            .find("throw")
            .unwrap() as u32
            + 1;
        assert_eq!(transpiled.original_position(line, column), Some((5, 1)));
    }
}
