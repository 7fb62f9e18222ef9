//! Why an execution did not produce a value, in words a model can act on.
//!
//! This is the one place that turns engine and host failures into the text the model reads. Limit
//! errors name the limit and the flag that raises it; guest errors carry the position in the code
//! the model wrote. Text that comes from outside toolweave (what the guest threw, an upstream's
//! error) is bounded here, whatever the language: a program cannot pass the result and log limits
//! by putting megabytes into an exception.

use std::time::Duration;

use toolweave_catalog::strip_invisible;
use toolweave_config::Denial;
use toolweave_sandbox::EngineError;

use crate::approval::AskReason;

/// How much of one error text from outside toolweave reaches the model: an upstream's error, a
/// guest error's name or message, one line of a guest traceback. The rest is cut, and "… (cut)"
/// says so.
pub(crate) const MAX_ERROR_TEXT: usize = 2000;
/// How much of a whole guest traceback reaches the model (the engine already keeps only the
/// outermost and innermost frames of a long one).
const MAX_TRACEBACK_TEXT: usize = 16 * 1024;

/// `text`, cut to at most `max` bytes on a character boundary, with "… (cut)" after the cut.
pub fn cut(text: String, max: usize) -> String {
    toolweave_jsonrpc::text::cut_marked(text, max, "… (cut)")
}

/// A guest traceback with each line cut to [`MAX_ERROR_TEXT`] (the last line carries the
/// exception's message), and the whole to [`MAX_TRACEBACK_TEXT`].
fn cut_traceback(traceback: String) -> String {
    if traceback.len() <= MAX_ERROR_TEXT {
        return traceback;
    }
    let lines: Vec<String> = traceback
        .split('\n')
        .map(|line| cut(line.to_owned(), MAX_ERROR_TEXT))
        .collect();
    cut(lines.join("\n"), MAX_TRACEBACK_TEXT)
}

/// The refusal of a call to a tool held because its definition changed since it was pinned
/// (`crate::pins`).
pub(crate) fn held_tool(server: &str, tool: &str, finding: Option<&str>) -> String {
    let why = match finding {
        Some(finding) => format!(
            "its definition has {}, so it is held until the person running toolweave reads it and accepts it with `toolweave trust`",
            cut(finding.to_owned(), MAX_ERROR_TEXT)
        ),
        None => "its definition (description, schemas or annotations) changed since toolweave pinned it, so it is held until the person running toolweave reviews the change and accepts it with `toolweave trust`".to_owned(),
    };
    format!(
        "{server}.{tool} may not be called now: {why}. Neither code nor the model can change this: use other tools meanwhile"
    )
}

/// An execution that ended without a value.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ExecutionError {
    /// The code did not parse.
    #[error("SyntaxError at line {line}, column {column}: {message}\n{frame}")]
    Syntax {
        /// The parser's message.
        message: String,
        /// 1-based line in the submitted code.
        line: u32,
        /// 1-based column.
        column: u32,
        /// The offending line with a caret under the position.
        frame: String,
    },
    /// The program is longer than toolweave accepts.
    #[error(
        "CodeTooLarge: the code is {size} bytes, over the limit of {limit}. Send a shorter program: keep data in tools, not in code."
    )]
    CodeTooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The guest threw and nothing caught it.
    #[error("{}", guest_message(name, message, *line, *column, traceback.as_deref()))]
    Guest {
        /// The error's `name` (`TypeError`, `Error`, ...).
        name: String,
        /// Its message.
        message: String,
        /// Line in the submitted code, when known.
        line: Option<u32>,
        /// Column, when known.
        column: Option<u32>,
        /// Where it was raised, in the submitted code's lines: a Python traceback, or the
        /// JavaScript error with the line and a caret and the calls that led there. Shown as
        /// is, in place of name and message, which it carries.
        traceback: Option<String>,
    },
    /// The execution ran past its deadline.
    #[error(
        "Timeout: the execution ran longer than {} (--timeout-ms {}). Do less per execution (fewer or smaller tool calls, no busy loops), or raise the limit.",
        human_duration(*limit),
        limit.as_millis()
    )]
    Timeout {
        /// The deadline.
        limit: Duration,
    },
    /// The deadline the execution asked for (`timeoutMs`) passed.
    #[error(
        "Timeout: the execution ran longer than the {} its timeoutMs asked for. Ask for more time (up to the gateway's --timeout-ms), or do less per execution.",
        human_duration(*limit)
    )]
    RequestedTimeout {
        /// The deadline that was hit.
        limit: Duration,
    },
    /// The deadline passed while a call waited for a person to approve it.
    #[error(
        "Timeout: the execution ran longer than {} ({}) while a call of {tool} waited for the person's approval. The time a person takes to answer counts against the execution: answer sooner, or {}.",
        human_duration(*limit),
        if *requested { "the time its timeoutMs asked for".to_owned() } else { format!("--timeout-ms {}", limit.as_millis()) },
        if *requested { "ask for more time with timeoutMs (up to the gateway's --timeout-ms)" } else { "run toolweave with a larger --timeout-ms (a call waiting at the approval page waits at most --approval-timeout-ms)" }
    )]
    TimeoutWaitingForApproval {
        /// The deadline.
        limit: Duration,
        /// The tool whose call waited, as guest code names it.
        tool: String,
        /// Whether the deadline was the one the execution asked for (`timeoutMs`).
        requested: bool,
    },
    /// The guest allocated more than its heap limit.
    #[error(
        "MemoryLimit: the code allocated more than {} MiB (--memory-mb {}). Keep less data in memory: filter tool results as they arrive, or raise the limit.",
        limit / (1024 * 1024),
        limit / (1024 * 1024)
    )]
    MemoryLimit {
        /// Heap limit in bytes.
        limit: usize,
    },
    /// One tool result is larger than the guest's memory could hold: it was not handed over.
    #[error(
        "MemoryLimit: {tool} returned {size} bytes (as JSON), more than the code can hold in {} MiB (--memory-mb {}). Ask the tool for less (filters, pages), or raise the limit.",
        limit / (1024 * 1024),
        limit / (1024 * 1024)
    )]
    ToolResultTooLarge {
        /// The tool, by its guest name.
        tool: String,
        /// The result's size as JSON.
        size: usize,
        /// Heap limit in bytes.
        limit: usize,
    },
    /// Recursion went deeper than the stack allows.
    #[error(
        "StackOverflow: recursion went deeper than the {} KiB stack allows (--stack-kb {}). Use a loop instead of deep recursion.",
        limit / 1024,
        limit / 1024
    )]
    StackOverflow {
        /// Stack limit in bytes.
        limit: usize,
    },
    /// The guest printed more than the log limit.
    #[error(
        "LogLimit: console output exceeded {} bytes (--max-log-bytes {limit}). Log less: print summaries, not whole results.",
        limit
    )]
    LogLimit {
        /// The limit in bytes.
        limit: usize,
    },
    /// The result, as JSON, is larger than allowed.
    #[error(
        "ResultTooLarge: the result is {size} bytes as JSON, over the limit of {limit} (--max-result-bytes {limit}), which keeps answers from filling the context. Return only what the task needs: filter the data in code, keep the fields you use, count or summarize, or return the first items (slice) and ask for more in the next run."
    )]
    ResultTooLarge {
        /// Size of the result as JSON.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The result, as JSON, is larger than the session keeps behind a handle.
    #[error(
        "ResultTooLarge: the result is {size} bytes as JSON, more than this session keeps behind a result handle ({limit} bytes, --max-handle-bytes {limit}). Return only what the task needs: filter the data in code, or keep parts of it with handle(value) and return a summary."
    )]
    HandleTooLarge {
        /// Size of the result as JSON.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The result cannot be expressed as JSON.
    #[error(
        "the result cannot be converted to JSON: {message}. Return plain objects, arrays, strings, numbers, booleans or null."
    )]
    Unserializable {
        /// Why.
        message: String,
    },
    /// The code awaited a promise nothing will ever settle.
    #[error(
        "NeverSettles: the code awaits a promise that can never settle (no tool call or timer is pending). Make sure every promise you await is resolved or rejected."
    )]
    NeverSettles,
    /// The execution made more tool calls than allowed.
    #[error(
        "ToolCallLimit: the execution tried to make more than {limit} tool calls (--max-tool-calls {limit}). Batch the work into fewer calls, or raise the limit."
    )]
    ToolCallLimit {
        /// The limit.
        limit: u32,
    },
    /// The code had more timers pending at once than an execution may.
    #[error(
        "TimerLimit: the code had more than {limit} timers (setTimeout) pending at once. Start the next batch once the last one has fired, or clear timers no longer needed."
    )]
    TimerLimit {
        /// The limit.
        limit: usize,
    },
    /// The execution called one tool more often than allowed.
    #[error(
        "ToolCallLimit: the execution tried to call {tool} more than {limit} times (--max-calls-per-tool {limit}). Batch the work into fewer calls, or raise the limit."
    )]
    ToolCallLimitPerTool {
        /// The tool, as `server.tool`.
        tool: String,
        /// The limit.
        limit: u32,
    },
    /// Tool results added up to more bytes than allowed.
    #[error(
        "UpstreamBytesLimit: the execution's tool results came to more than {limit} bytes (--max-upstream-bytes {limit}). Ask the tools for less (filters, pages), or raise the limit."
    )]
    UpstreamBytesLimit {
        /// The limit.
        limit: u64,
    },
    /// A content block the program returned could not go in the answer.
    #[error("{0}")]
    Block(BlockError),
    /// The client cancelled the request.
    #[error("Cancelled: the client cancelled this execution")]
    Cancelled,
    /// Something went wrong inside toolweave itself.
    #[error("internal error in toolweave: {message}")]
    Internal {
        /// What went wrong.
        message: String,
    },
}

impl ExecutionError {
    /// The texts of the error that come from the code or its tools (a thrown error's message
    /// and traceback, a syntax error's line), for redaction; the rest is toolweave's wording.
    pub(crate) fn texts_mut(&mut self) -> Vec<&mut String> {
        match self {
            Self::Syntax { message, frame, .. } => vec![message, frame],
            Self::Guest {
                name,
                message,
                traceback,
                ..
            } => {
                let mut texts = vec![name, message];
                texts.extend(traceback.as_mut());
                texts
            }
            Self::Unserializable { message } | Self::Internal { message } => vec![message],
            _ => Vec::new(),
        }
    }

    /// Maps an engine failure; limits come from the execution's configuration.
    pub(crate) fn from_engine(error: EngineError, stack_limit: usize) -> Self {
        match error {
            EngineError::Syntax {
                message,
                line,
                column,
                frame,
            } => Self::Syntax {
                message,
                line,
                column,
                frame,
            },
            EngineError::CodeTooLarge { size, limit } => Self::CodeTooLarge { size, limit },
            EngineError::Guest {
                message,
                name,
                line,
                column,
                stack,
            } => Self::Guest {
                name: cut(name, MAX_ERROR_TEXT),
                message: cut(message, MAX_ERROR_TEXT),
                line,
                column,
                traceback: stack.map(cut_traceback),
            },
            EngineError::Timeout { limit } => Self::Timeout { limit },
            EngineError::MemoryLimit { limit } => Self::MemoryLimit { limit },
            EngineError::StackOverflow => Self::StackOverflow { limit: stack_limit },
            EngineError::LogLimit { limit } => Self::LogLimit { limit },
            EngineError::ResultTooLarge { size, limit } => Self::ResultTooLarge { size, limit },
            EngineError::Unserializable { message } => Self::Unserializable {
                message: cut(message, MAX_ERROR_TEXT),
            },
            EngineError::NeverSettles => Self::NeverSettles,
            EngineError::ToolCallLimit { limit } => Self::ToolCallLimit { limit },
            EngineError::TimerLimit { limit } => Self::TimerLimit { limit },
            EngineError::Cancelled => Self::Cancelled,
            EngineError::Internal { message } => Self::Internal { message },
        }
    }

    /// A short stable name for the kind of failure, for `structuredContent` and audit.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Syntax { .. } => "SyntaxError",
            Self::CodeTooLarge { .. } => "CodeTooLarge",
            Self::Guest { .. } => "GuestError",
            Self::Timeout { .. }
            | Self::RequestedTimeout { .. }
            | Self::TimeoutWaitingForApproval { .. } => "Timeout",
            Self::MemoryLimit { .. } | Self::ToolResultTooLarge { .. } => "MemoryLimit",
            Self::StackOverflow { .. } => "StackOverflow",
            Self::LogLimit { .. } => "LogLimit",
            Self::ResultTooLarge { .. } | Self::HandleTooLarge { .. } => "ResultTooLarge",
            Self::Unserializable { .. } => "Unserializable",
            Self::NeverSettles => "NeverSettles",
            Self::ToolCallLimit { .. } | Self::ToolCallLimitPerTool { .. } => "ToolCallLimit",
            Self::UpstreamBytesLimit { .. } => "UpstreamBytesLimit",
            Self::TimerLimit { .. } => "TimerLimit",
            Self::Block(BlockError::TooMany { .. } | BlockError::TooManyBytes { .. }) => {
                "EmitLimit"
            }
            Self::Block(BlockError::Invalid { .. }) => "InvalidBlock",
            Self::Cancelled => "Cancelled",
            Self::Internal { .. } => "Internal",
        }
    }
}

/// Why a content block code emitted (`emit(block)`) or returned is not in the answer; the
/// guest reads it as the error of `emit`, or the answer as the execution's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockError {
    /// The answer has as many blocks as it may.
    #[error(
        "EmitLimit: {what}: the answer has {limit} content blocks already, the most it may (--max-emitted-blocks {limit}). Send fewer: combine images into one, or send the rest from a later execution."
    )]
    TooMany {
        /// `emit(block)`, or which returned block.
        what: String,
        /// The limit.
        limit: usize,
    },
    /// The block would take the answer's blocks past their bytes.
    #[error(
        "EmitLimit: {what}: this block of {size} bytes would make the answer's content blocks {total} bytes (base64 data as sent), over the limit of {limit} (--max-emitted-bytes {limit}). Send smaller media (scale images down, crop, a lower quality) or fewer."
    )]
    TooManyBytes {
        /// `emit(block)`, or which returned block.
        what: String,
        /// The block's bytes.
        size: usize,
        /// What the blocks would come to.
        total: usize,
        /// The limit.
        limit: usize,
    },
    /// The block is not a content block toolweave passes on.
    #[error(
        "InvalidBlock: {what}: {problem}. A block looks like {{type: \"image\", data: <base64>, mimeType: \"image/png\"}}, {{type: \"audio\", data: <base64>, mimeType: \"audio/wav\"}}, {{type: \"text\", text}} or {{type: \"resource_link\", uri, name}}."
    )]
    Invalid {
        /// `emit(block)`, or which returned block.
        what: String,
        /// What is wrong with it.
        problem: String,
    },
}

fn guest_message(
    name: &str,
    message: &str,
    line: Option<u32>,
    column: Option<u32>,
    traceback: Option<&str>,
) -> String {
    if let Some(traceback) = traceback.filter(|traceback| !traceback.is_empty()) {
        return traceback.to_owned();
    }
    let head = if name.is_empty() || message.starts_with(name) {
        message.to_owned()
    } else if message.is_empty() {
        name.to_owned()
    } else {
        format!("{name}: {message}")
    };
    match (line, column) {
        (Some(line), Some(column)) => format!("{head}\n    at line {line}, column {column}"),
        (Some(line), None) => format!("{head}\n    at line {line}"),
        _ => head,
    }
}

fn human_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis >= 1000 && millis.is_multiple_of(1000) {
        format!("{} s", millis / 1000)
    } else {
        format!("{millis} ms")
    }
}

/// A search or describe request past the bounds discovery keeps to: it does no work, and the
/// requester reads what to change. Bounding the request bounds the work the gateway does for it
/// (every name is compared with every tool when it names none).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryError {
    /// More different names than one describe request may hold.
    #[error(
        "describe at most {limit} tools at once: this request names more than {limit} different ones ({given} names in all). Describe them {limit} at a time, or name a server to describe all of its tools."
    )]
    TooManyNames {
        /// How many names the request holds, duplicates included.
        given: usize,
        /// The bound.
        limit: usize,
    },
    /// A name longer than any tool's name can be.
    #[error(
        "a tool name is at most {limit} bytes, and name {position} of this request is {size} bytes (it begins {beginning:?}). Name tools as \"server.tool\"."
    )]
    NameTooLong {
        /// Its position in the request, from 1.
        position: usize,
        /// Its size in bytes.
        size: usize,
        /// Its first characters.
        beginning: String,
        /// The bound.
        limit: usize,
    },
    /// A search query longer than the bound.
    #[error(
        "a search query is at most {limit} bytes, and this one is {size}. Search with a few words that say what the tool should do."
    )]
    QueryTooLong {
        /// Its size in bytes.
        size: usize,
        /// The bound.
        limit: usize,
    },
    /// The work failed inside toolweave.
    #[error("internal error: {message}")]
    Internal {
        /// What went wrong.
        message: String,
    },
}

/// Why a tool provider could not list its tools or answer a call. The gateway words it for the
/// model as "`server.tool` failed: ...".
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// An MCP server's failure, worded by the upstream manager (it names the server, the cause
    /// and what to change).
    #[error(transparent)]
    Upstream(#[from] toolweave_upstream::Error),
    /// The execution stopped waiting for the call.
    #[error("the call was cancelled")]
    Cancelled,
    /// The provider has no tool of that name.
    #[error("\"{namespace}\" has no tool \"{tool}\"")]
    UnknownTool {
        /// The provider's namespace.
        namespace: String,
        /// The name asked for.
        tool: String,
    },
    /// The provider offers no such thing (resources and prompts are MCP servers' only).
    #[error("\"{namespace}\" offers no {what}: only MCP servers have resources and prompts")]
    NotOffered {
        /// The provider's namespace.
        namespace: String,
        /// What was asked for: `resources` or `prompts`.
        what: &'static str,
    },
    /// The provider's tool definitions cannot be used.
    #[error("{reason}")]
    Definition {
        /// Which definitions, and what to change.
        reason: String,
    },
    /// Any other failure, in the provider's words.
    #[error("{0}")]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

/// Why a gateway could not be built from what its builder was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// Two providers (or a provider and a configured MCP server) share a namespace: guest code
    /// could not tell their tools apart.
    #[error(
        "two tool providers have the namespace \"{namespace}\"; give each provider a namespace of its own (an MCP server's is its name in the config)"
    )]
    DuplicateNamespace {
        /// The namespace given twice.
        namespace: String,
    },
    /// A provider's namespace is empty or only blanks.
    #[error(
        "a tool provider has an empty namespace; name it, as guest code calls tools.<namespace>.<tool>"
    )]
    EmptyNamespace,
    /// Worker isolation was asked for with no way to start workers.
    #[error(
        "worker isolation needs a worker command: pass GatewayBuilder::worker(toolweave_core::worker_command()?) and begin main with toolweave_core::run_worker_if_asked(), or choose Isolation::InProcess"
    )]
    NoWorkerCommand,
}

/// "no tool named X (did you mean A, B?)" for each unknown name; `search` is what the reader
/// calls to search (a guest function, or the `search_tools` MCP tool).
pub(crate) fn unknown_names_message(unknown: &[(String, Vec<String>)], search: &str) -> String {
    unknown
        .iter()
        .map(|(name, suggestions)| {
            if suggestions.is_empty() {
                format!("no tool named \"{name}\"; use {search}(\"what you need\") to find one")
            } else {
                format!(
                    "no tool named \"{name}\"; did you mean {}?",
                    suggestions.join(", ")
                )
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_error_texts_lose_terminal_escapes() {
        let error = CallError::ToolError {
            tool: "s.t".to_owned(),
            message: "\u{1b}[1;31mError:\u{1b}[0m disk full".to_owned(),
        };
        assert_eq!(error.to_string(), "s.t returned an error: Error: disk full");
    }

    #[test]
    fn arguments_that_are_not_an_object_are_named_as_written() {
        use serde_json::json;
        assert_eq!(
            arguments_given(&json!([1, 2]), true),
            "2 positional arguments"
        );
        assert_eq!(arguments_given(&json!([1]), true), "1 positional argument");
        assert_eq!(arguments_given(&json!([1, 2]), false), "an array");
        assert_eq!(arguments_given(&json!(1), false), "a number");
    }

    #[test]
    fn guest_text_is_bounded() {
        assert_eq!(cut("short".to_owned(), 10), "short");
        assert_eq!(cut("ééé".to_owned(), 3), "é… (cut)");
        let error = ExecutionError::from_engine(
            EngineError::Guest {
                message: "x".repeat(1 << 20),
                name: "Error".to_owned(),
                line: Some(1),
                column: Some(1),
                stack: None,
            },
            0,
        );
        let text = error.to_string();
        assert!(text.len() < MAX_ERROR_TEXT + 100, "{}", text.len());
        assert!(text.starts_with("Error: xxx"), "{text}");
        assert!(text.contains("… (cut)\n    at line 1, column 1"), "{text}");
    }

    #[test]
    fn tracebacks_keep_every_line_each_bounded() {
        let traceback = format!(
            "Traceback (most recent call last):\n  File \"main.py\", line 1\nValueError: {}",
            "x".repeat(1 << 20)
        );
        let error = ExecutionError::from_engine(
            EngineError::Guest {
                message: "x".repeat(1 << 20),
                name: "ValueError".to_owned(),
                line: Some(1),
                column: None,
                stack: Some(traceback),
            },
            0,
        );
        let text = error.to_string();
        assert!(
            text.starts_with("Traceback (most recent call last):\n  File"),
            "{text}"
        );
        assert!(text.contains("\nValueError: xxx"), "{text}");
        assert!(text.ends_with("… (cut)"), "{text}");
        assert!(text.len() < 2 * MAX_ERROR_TEXT, "{}", text.len());
        let many_lines = "line\n".repeat(10_000);
        assert!(cut_traceback(many_lines).len() <= MAX_TRACEBACK_TEXT + "… (cut)".len());
    }
}

/// The warning of an answer whose result was kept behind handle `id` instead: how large it is,
/// why it is not in the answer, how long it is kept, and how code reads it. `key` is a key of the
/// value when it is an object, for the example path.
pub(crate) fn handle_note(
    id: &str,
    bytes: usize,
    limit: usize,
    ttl: Duration,
    python: bool,
    key: Option<&str>,
) -> String {
    let path = key.map(|key| serde_json::Value::String(key.to_owned()).to_string());
    let read = match (python, &path) {
        (true, Some(path)) => {
            format!("await results.get(\"{id}\", path={path}, offset=0, limit=100)")
        }
        (true, None) => format!("await results.get(\"{id}\", offset=0, limit=100)"),
        (false, Some(path)) => {
            format!("await results.get(\"{id}\", {{ path: {path}, offset: 0, limit: 100 }})")
        }
        (false, None) => format!("await results.get(\"{id}\", {{ offset: 0, limit: 100 }})"),
    };
    format!(
        "The result is {bytes} bytes as JSON, more than an answer carries (--max-result-bytes {limit}), so it is kept in this session as result handle \"{id}\" for {} (--handle-ttl-ms {}); the answer holds its size, a preview and its shape (keys and types, lengths in characters and items). Read what the task needs in a later execute_code: {read} (path into the value, like \"items.3.name\"; offset and limit count characters of a string or items of an array), or the whole value with results.get(\"{id}\") to pass it on.",
        human_duration(ttl),
        ttl.as_millis()
    )
}

/// Why the `"session"` of an `execute_code` call (over HTTP without an MCP session) names no
/// session its caller may use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionHandleError {
    /// Not a string.
    #[error("\"session\" must be a string: the \"session\" of an earlier execute_code answer")]
    NotAString,
    /// Not sealed by this process for this caller.
    #[error(
        "\"session\" is not a session handle this toolweave made for this caller: it was changed, made with another token, or by another toolweave process (such as before a restart). Pass the \"session\" of an execute_code answer made with this token unchanged, or leave \"session\" out to start a new session (its store and result handles start empty)."
    )]
    Forged,
    /// Its time was up.
    #[error(
        "\"session\" has expired: a session unused for {} (--session-ttl-ms {}) is forgotten, with its store, result handles and approvals. Pass the \"session\" of the latest answer, or leave \"session\" out to start a new session (its store and result handles start empty).",
        human_duration(*ttl),
        ttl.as_millis()
    )]
    Expired {
        /// How long an unused session is kept.
        ttl: Duration,
    },
    /// Handles cannot be sealed or opened in this process.
    #[error("toolweave cannot keep a session through a handle here: {why}")]
    Unavailable {
        /// Why.
        why: String,
    },
}

/// Why code's ask of its session's store or result handles failed, as the guest reads it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionStateError {
    /// The store would hold more bytes than allowed.
    #[error(
        "store.set(\"{key}\", ...) would make the store {bytes} bytes (keys and values as JSON), over the limit of {limit} (--max-store-bytes {limit}). Store less (a summary, the ids you need), or store.delete keys you no longer need."
    )]
    StoreBytes {
        /// The key being set.
        key: String,
        /// What the store would hold.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The store holds as many keys as allowed.
    #[error(
        "store.set: the store holds {limit} keys, the most it may (--max-store-keys {limit}). Keep related values under one key, or store.delete keys you no longer need."
    )]
    StoreKeys {
        /// The limit.
        limit: usize,
    },
    /// A value to keep behind a handle is larger than all handles may be.
    #[error(
        "the value is {bytes} bytes as JSON, more than this session keeps behind result handles ({limit} bytes, --max-handle-bytes {limit}). Keep a smaller part of it."
    )]
    HandleTooLarge {
        /// Its size as JSON.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The handle's time was up.
    #[error(
        "result handle \"{id}\" has expired: handles are kept {} after they are made (--handle-ttl-ms {}). Run the code that made the value again.",
        human_duration(*ttl),
        ttl.as_millis()
    )]
    HandleExpired {
        /// The handle.
        id: String,
        /// How long handles are kept.
        ttl: Duration,
    },
    /// The handle was dropped to make room for newer ones.
    #[error(
        "result handle \"{id}\" was dropped to make room for newer ones: this session keeps {limit} bytes of results behind handles (--max-handle-bytes {limit}). Run the code that made the value again, and read what you need of a handle before making many more."
    )]
    HandleEvicted {
        /// The handle.
        id: String,
        /// The limit.
        limit: usize,
    },
    /// The request belongs to no session, so nothing is kept for a later execution.
    #[error(
        "{function} keeps nothing here: this execution belongs to no session, so no execution can read what another kept. Over HTTP without an MCP session, pass execute_code the \"session\" of an earlier answer to keep values across executions, or do the work in one execution."
    )]
    NoSession {
        /// The function code called.
        function: &'static str,
    },
    /// No such handle in this session.
    #[error(
        "no result handle \"{id}\" in this session: a handle is the \"handle\" of an answer or of handle(value), and is kept only by the session that made it, for --handle-ttl-ms (over HTTP without an MCP session, pass execute_code the \"session\" of the answer that made it)"
    )]
    UnknownHandle {
        /// The id code gave.
        id: String,
    },
    /// The state backend (`--state`) that keeps this session's result handles did not answer.
    #[error(
        "result handle \"{id}\" could not be read: {why}. Try again shortly; the handle is kept there until it expires."
    )]
    Unreachable {
        /// The handle.
        id: String,
        /// Why, naming the backend.
        why: String,
    },
    /// A path in `results.get` names nothing.
    #[error(
        "results.get(\"{handle}\", {{path: \"{path}\"}}): {found} is {has}, with nothing at the next step of the path. Paths look like \"items.3.name\" or \"items[3].name\"."
    )]
    NoSuchPath {
        /// The handle.
        handle: String,
        /// The path code gave.
        path: String,
        /// How far the path led.
        found: String,
        /// What is there.
        has: String,
    },
    /// `offset` or `limit` given for a value that is neither a string nor an array.
    #[error(
        "results.get(\"{handle}\", ...): offset and limit read pieces of a string or an array, and the value there is {has}; give a path to one"
    )]
    NotSliceable {
        /// The handle.
        handle: String,
        /// What is there.
        has: String,
    },
}

/// How many names of what exists (tools of a server, servers) an unknown tool's message lists.
const MAX_LISTED_NAMES: usize = 20;

/// How many schema violations a message lists before it says "and N more".
const MAX_LISTED_VIOLATIONS: usize = 8;

/// Why a request of guest code to the host (a tool call, a server's resources or prompts, a
/// search, the session's store, the LLM) got no value. The guest reads it as the message of the
/// rejected promise (or the raised exception); a call of a tool listed directly, as the error
/// result of that call.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The name names no tool.
    #[error(
        "{}",
        unknown_tool_text(name, server, suggestions, search, unavailable)
    )]
    UnknownTool {
        /// The name, as the code wrote it.
        name: String,
        /// What its server part names (boxed: it is large, and rare).
        server: Box<NamedServer>,
        /// The closest tools' names.
        suggestions: Vec<String>,
        /// The guest function that searches tools (`searchTools`, `search_tools`).
        search: &'static str,
        /// Why each server that is not up is not (when the name names no server: the tool may
        /// be one of theirs).
        unavailable: Vec<String>,
    },
    /// The server the name names is not up: still starting past its bound, or failed.
    #[error("cannot call {name}: {}", strip_invisible(&error.to_string()))]
    ServerDown {
        /// The name, as the code wrote it.
        name: String,
        /// Why the server is not up (boxed: it is large, and rare).
        error: Box<ProviderError>,
    },
    /// The gateway's policy keeps the tool from code.
    #[error(
        "{server}.{tool} may not be called: toolweave's policy keeps it from code ({denial}). The people who run toolweave set the rules (--allow, --deny, its settings file); code cannot change them"
    )]
    Denied {
        /// The server, as configured.
        server: String,
        /// The tool, as the server lists it.
        tool: String,
        /// The rule that keeps it out.
        denial: Denial,
    },
    /// An MCP Apps tool that only the server's user interface calls.
    #[error(
        "{server}.{tool} is for the app only: {server} lists it for its own user interface (its _meta.ui.visibility leaves out the model), so toolweave neither shows nor calls it. Use the tools {server} lists for the model instead (a search for \"{server}\" lists them)"
    )]
    AppOnly {
        /// The server, as configured.
        server: String,
        /// The tool, as the server lists it.
        tool: String,
    },
    /// The tool's definition changed since it was pinned, or its first one has findings
    /// (`crate::pins`).
    #[error("{}", held_tool(server, tool, finding.as_deref()))]
    Held {
        /// The server, as configured.
        server: String,
        /// The tool, as the server lists it.
        tool: String,
        /// The finding that holds it; none when its definition changed since it was pinned.
        finding: Option<String>,
    },
    /// The rules of the identity the execution runs for keep the tool out.
    #[error(
        "{tool} was not called: the rules of identity \"{identity}\" keep it out ({denial}). The people who run toolweave set each identity's rules in its settings file (\"identities\")"
    )]
    IdentityDenied {
        /// The tool, by its guest name.
        tool: String,
        /// The identity's name.
        identity: String,
        /// The rule that keeps it out.
        denial: Denial,
    },
    /// The execution's `allowedTools` leaves the tool out.
    #[error(
        "{tool} was not called: this execution's allowedTools ({}) leaves out {configured}. Run it in an execution whose allowedTools names it, or leave allowedTools out",
        listed(patterns, "none")
    )]
    NotInAllowedTools {
        /// The tool (or server method), as the code named it.
        tool: String,
        /// `server.tool` as configured.
        configured: String,
        /// The execution's `allowedTools`, as given.
        patterns: Vec<String>,
    },
    /// The policy keeps a server's resources or prompts from code.
    #[error(
        "{name} is not allowed by the policy{}: {denial} (rules over server.tool match a server's resources and prompts as server.resources/read, server.prompts/get, ...)",
        identity.as_ref().map(|identity| format!(" for identity \"{identity}\"")).unwrap_or_default()
    )]
    MethodDenied {
        /// `server.method`, as configured (`github.resources/read`).
        name: String,
        /// The identity whose rules decided, when the execution runs for one.
        identity: Option<String>,
        /// The rule that keeps it out.
        denial: Denial,
    },
    /// The tool is in the ask tier, and the person asked declined the call.
    #[error("{tool} was not called: {reason}, and the person asked declined this call")]
    Declined {
        /// The tool, by its guest name.
        tool: String,
        /// Why it is in the ask tier.
        reason: AskReason,
    },
    /// The tool is in the ask tier, and nobody answered.
    #[error("{tool} was not called: {reason}, and {why}")]
    Unanswered {
        /// The tool, by its guest name.
        tool: String,
        /// Why it is in the ask tier.
        reason: AskReason,
        /// Why no answer came.
        why: String,
    },
    /// The tool is in the ask tier, and nobody could be asked.
    #[error("{}", approval_unavailable(tool, configured, reason, why))]
    ApprovalUnavailable {
        /// The tool, by its guest name.
        tool: String,
        /// `server.tool` as configured, for the approve rule that would cover it.
        configured: String,
        /// Why it is in the ask tier.
        reason: AskReason,
        /// Why nobody could be asked.
        why: String,
    },
    /// The execution ended while approval was asked.
    #[error("{tool} was not called: the execution ended while approval was asked")]
    ApprovalInterrupted {
        /// The tool, by its guest name.
        tool: String,
    },
    /// The arguments are not an object.
    #[error(
        "invalid arguments for {tool}: a tool takes its arguments by name, in one object like {{ name: value }}, got {got}. Call it as {signature}"
    )]
    ArgumentsNotObject {
        /// The tool, by its guest name.
        tool: String,
        /// What they are (`a number`, `2 positional arguments`, ...).
        got: String,
        /// The tool's signature in the code's language.
        signature: String,
    },
    /// The arguments do not match the tool's `inputSchema`.
    #[error("{}", violation_text(&format!("invalid arguments for {tool}"), violations, signature))]
    ArgumentsMismatch {
        /// The tool, by its guest name.
        tool: String,
        /// Each violation, as `path: message`.
        violations: Vec<String>,
        /// The tool's signature in the code's language.
        signature: String,
    },
    /// An argument the tool's input schema does not declare, close to a declared one that was
    /// not given (`ttl` for `expire_seconds`): the call was not sent.
    #[error(
        "invalid arguments for {tool}: \"{given}\" is not an argument of {tool}; did you mean \"{meant}\"? The call was not sent.\nexpected: {signature}"
    )]
    ArgumentMisnamed {
        /// The tool, by its guest name.
        tool: String,
        /// The argument given, cut.
        given: String,
        /// The declared argument it most likely meant.
        meant: String,
        /// The tool's signature in the code's language.
        signature: String,
    },
    /// The tool's provider failed the call (the server's error, a timeout, a lost connection),
    /// or a server's request (`server.resources/read`, ...) failed.
    #[error("{name} failed: {}", strip_invisible(&error.to_string()))]
    Failed {
        /// The tool by its guest name, or `server.method`.
        name: String,
        /// Why, in the provider's words (boxed: it is large, and rare).
        error: Box<ProviderError>,
    },
    /// The tool answered with an error result.
    #[error("{tool} returned an error: {}", strip_invisible(message))]
    ToolError {
        /// The tool, by its guest name.
        tool: String,
        /// The error's text, bounded.
        message: String,
    },
    /// The tool's `structuredContent` does not match its `outputSchema`.
    #[error(
        "{}",
        violation_text(&format!("{tool} returned structuredContent that does not match its outputSchema"), violations, "")
    )]
    ResultMismatch {
        /// The tool, by its guest name (as configured for a call of a tool listed directly).
        tool: String,
        /// Each violation, as `path: message`.
        violations: Vec<String>,
    },
    /// A server's list (`resources.<server>.list()`, ...) cannot be read.
    #[error("{name} failed: {problem}")]
    BadList {
        /// `server.method`.
        name: String,
        /// What is wrong with it.
        problem: String,
    },
    /// `resources.<server>` or `prompts.<server>` names no server.
    #[error(
        "no server named \"{named}\" for {kind}.<server>; the servers are: {}",
        if servers.is_empty() { "none".to_owned() } else { servers.join(", ") }
    )]
    NoServer {
        /// The name, as the code wrote it (bounded).
        named: String,
        /// `resources` or `prompts`.
        kind: &'static str,
        /// The servers' names in code.
        servers: Vec<String>,
    },
    /// The call went past a limit of the execution, which ends it.
    #[error("{0}")]
    Limit(ExecutionError),
    /// The answer is larger than the code's memory can hold.
    #[error(
        "the answer is {size} bytes as JSON, more than the code can hold in {} MiB (--memory-mb {}); {smaller}",
        limit / (1024 * 1024),
        limit / (1024 * 1024)
    )]
    AnswerTooLarge {
        /// Its size as JSON.
        size: usize,
        /// The code's memory, in bytes.
        limit: usize,
        /// What to ask for instead.
        smaller: &'static str,
    },
    /// The session's store or result handles refused.
    #[error("{0}")]
    Session(SessionStateError),
    /// The LLM gave no answer.
    #[error("{0}")]
    Llm(LlmError),
    /// A search or describe past the bounds discovery keeps to.
    #[error("{0}")]
    Discovery(DiscoveryError),
    /// A describe that matched no tool but held ones: why each is held.
    #[error("{}", held.join(". "))]
    AllHeld {
        /// Why each named tool is held.
        held: Vec<String>,
    },
    /// A describe whose names all name no tool.
    #[error("{}", unknown_names_message(unknown, search))]
    UnknownNames {
        /// Each name, with the closest tools' names.
        unknown: Vec<(String, Vec<String>)>,
        /// The guest function that searches tools.
        search: &'static str,
    },
    /// A describe whose names all name tools of servers that are not ready.
    #[error("{}", unavailable.join("\n"))]
    ServersNotReady {
        /// Why each server they name is not available, naming it: still starting, or the
        /// error that names the cause and what to change.
        unavailable: Vec<String>,
    },
    /// Something went wrong inside toolweave itself.
    #[error("internal error: {message}")]
    Internal {
        /// What went wrong.
        message: String,
    },
}

/// What the server part of an unknown tool's name names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamedServer {
    /// A server there is.
    Server {
        /// Its name in code.
        name: String,
        /// Its tools' names in code.
        tools: Vec<String>,
    },
    /// No server.
    None {
        /// The name's server part, when it has one.
        namespace: Option<String>,
        /// The servers' names in code, in name order.
        servers: Vec<String>,
    },
}

impl CallError {
    /// Whether the call was refused (by the policy, the execution's rules or the person asked)
    /// rather than failed: the audit log's and the observer's `denied`.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Self::Denied { .. }
                | Self::AppOnly { .. }
                | Self::Held { .. }
                | Self::IdentityDenied { .. }
                | Self::NotInAllowedTools { .. }
                | Self::MethodDenied { .. }
                | Self::Declined { .. }
                | Self::Unanswered { .. }
                | Self::ApprovalUnavailable { .. }
        )
    }

    /// The text guest code reads, cut to what code with `memory_limit` bytes of memory can hold
    /// (JSON writes at most six bytes for one of text).
    pub(crate) fn guest_text(&self, memory_limit: usize) -> String {
        let text = self.to_string();
        if crate::budget::string_json_len(&text) > memory_limit {
            return cut(text, memory_limit / 6);
        }
        text
    }
}

/// What arguments that are not an object are, as the code wrote them: Python's positional
/// arguments (`tools.s.t(1, 2)`) arrive as a list, JavaScript's first argument as it is.
pub(crate) fn arguments_given(args: &serde_json::Value, python: bool) -> String {
    match args {
        serde_json::Value::Array(items) if python => match items.len() {
            1 => "1 positional argument".to_owned(),
            count => format!("{count} positional arguments"),
        },
        other => toolweave_config::json_kind(other).to_owned(),
    }
}

/// "unknown tool" with what was asked, the closest tools, and what exists (the tools of the
/// server the name names, or the servers when it names none).
fn unknown_tool_text(
    name: &str,
    server: &NamedServer,
    suggestions: &[String],
    search: &str,
    unavailable: &[String],
) -> String {
    // A server called as if it were a tool (`tools.github(...)`) is asked for as `github.`.
    if let (Some(_), NamedServer::Server { name, tools }) = (name.strip_suffix('.'), server) {
        return format!(
            "tools.{name} is a server, not a tool: call one of its tools, as tools.{name}.<tool>({{ ... }}). The tools of {name} are {}. {search}(\"what you need\") finds tools by what they do.",
            listed(tools, "none")
        );
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let mut message = format!("unknown tool \"{name}\"");
    let listing = match server {
        NamedServer::Server { name, tools } => {
            format!("The tools of {name} are {}.", listed(tools, "none"))
        }
        NamedServer::None { namespace, servers } => {
            match namespace {
                Some(namespace) => {
                    message.push_str(&format!(": there is no server \"{namespace}\""));
                }
                None => message.push_str(": name a tool as \"server.tool\""),
            }
            format!("The servers are {}.", listed(servers, "none"))
        }
    };
    if suggestions.is_empty() {
        message.push_str(". ");
    } else {
        message.push_str(&format!("; did you mean {}? ", suggestions.join(", ")));
    }
    message.push_str(&listing);
    message.push_str(&format!(
        " {search}(\"what you need\") finds tools by what they do."
    ));
    for reason in unavailable {
        message.push_str(&format!(" Not available: {reason}."));
    }
    message
}

/// Up to [`MAX_LISTED_NAMES`] of `names`, comma-separated, with how many more there are.
fn listed(names: &[String], none: &str) -> String {
    if names.is_empty() {
        return none.to_owned();
    }
    let mut text = names[..names.len().min(MAX_LISTED_NAMES)].join(", ");
    if names.len() > MAX_LISTED_NAMES {
        text.push_str(&format!(" and {} more", names.len() - MAX_LISTED_NAMES));
    }
    text
}

/// `head:`, then each violation on a line of its own (at most [`MAX_LISTED_VIOLATIONS`]), then
/// the signature expected, when there is one.
fn violation_text(head: &str, violations: &[String], signature: &str) -> String {
    let mut message = format!("{head}:");
    for violation in violations.iter().take(MAX_LISTED_VIOLATIONS) {
        message.push_str("\n  - ");
        message.push_str(violation);
    }
    if violations.len() > MAX_LISTED_VIOLATIONS {
        message.push_str(&format!(
            "\n  … and {} more",
            violations.len() - MAX_LISTED_VIOLATIONS
        ));
    }
    if !signature.is_empty() {
        message.push_str("\nexpected: ");
        message.push_str(signature);
    }
    message
}

/// The refusal of a call in the ask tier when nobody could be asked (`why`): what the person
/// running toolweave can change, which neither code nor the model can.
fn approval_unavailable(display: &str, tool: &str, reason: &AskReason, why: &str) -> String {
    let change = match reason {
        AskReason::AskRule(rule) => format!(
            "the person running toolweave decides with the ask rule \"{rule}\" (approve rules do not apply to a tool an ask rule matches)"
        ),
        AskReason::Destructive | AskReason::Unannotated => {
            format!(
                "the person running toolweave can pre-approve this one tool by starting it with --approve {tool} (or adding \"{tool}\" to \"approve\" in its settings file)"
            )
        }
    };
    format!(
        "{display} was not called: {reason}, so each call needs approval, and {why}. Neither code nor the model can change this: {change}"
    )
}

/// Why `llm.ask` or `llm.think` got no answer, as the guest reads it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// The execution sent as many requests as it may.
    #[error(
        "{function}: this execution has asked the LLM {limit} times, the most it may (--max-llm-rounds {limit}). Put more into one request (several questions in one prompt), or continue in another execution."
    )]
    Rounds {
        /// `llm.ask` or `llm.think`.
        function: &'static str,
        /// The limit.
        limit: u32,
    },
    /// The request asks for more tokens than the execution has left.
    #[error(
        "{function}: maxTokens {asked} is more than the {left} tokens left of this execution's LLM budget (--max-llm-tokens {limit}, the sum of the maxTokens its requests ask for). Ask for {left} or fewer."
    )]
    Tokens {
        /// `llm.ask` or `llm.think`.
        function: &'static str,
        /// What the request asked for.
        asked: u32,
        /// What is left.
        left: u64,
        /// The limit.
        limit: u64,
    },
    /// The execution's tokens are spent.
    #[error(
        "{function}: this execution has spent its LLM budget of {limit} tokens (--max-llm-tokens {limit}, the sum of the maxTokens its requests ask for); continue in another execution."
    )]
    TokensSpent {
        /// `llm.ask` or `llm.think`.
        function: &'static str,
        /// The limit.
        limit: u64,
    },
    /// The system prompt is not one the gateway allows.
    #[error(
        "{function}: {} this gateway allows only {allowed} exact system prompt(s) (--llm-system-prompts, or \"llmSystemPrompts\" in the settings file); send one of them as system, word for word.",
        if *given { "this system prompt is not allowed:" } else { "a system prompt is required:" }
    )]
    SystemPrompt {
        /// `llm.ask` or `llm.think`.
        function: &'static str,
        /// Whether the request gave a system prompt at all.
        given: bool,
        /// How many are allowed.
        allowed: usize,
    },
    /// The MCP client did not declare sampling, and no provider is configured.
    #[error(
        "{function}: the MCP client did not declare sampling, so toolweave cannot ask its model. Use a client that supports sampling, or give toolweave an LLM of its own in its settings file: \"llm\": {{\"kind\": \"anthropic\" or \"openai\", \"url\": ..., \"model\": ..., \"apiKeyEnv\": \"VARIABLE_WITH_THE_KEY\"}}."
    )]
    NoSampling {
        /// `llm.ask` or `llm.think`.
        function: &'static str,
    },
    /// No MCP client runs this execution, and no provider is configured.
    #[error(
        "{function}: no MCP client runs this execution, so there is no model to ask by sampling. Give toolweave an LLM of its own in its settings file: \"llm\": {{\"kind\": \"anthropic\" or \"openai\", \"url\": ..., \"model\": ..., \"apiKeyEnv\": \"VARIABLE_WITH_THE_KEY\"}}."
    )]
    NoClient {
        /// `llm.ask` or `llm.think`.
        function: &'static str,
    },
    /// The client's model did not answer.
    #[error("{function}: the client's model did not answer: {reason}")]
    Sampling {
        /// `llm.ask` or `llm.think`.
        function: &'static str,
        /// Why, as the client or toolweave tells it.
        reason: String,
    },
    /// The provider's key is not in the environment.
    #[error(
        "{function}: the LLM's key is missing: the environment variable {variable} (\"apiKeyEnv\" of \"llm\" in the settings file) is not set in toolweave's environment"
    )]
    NoKey {
        /// `llm.ask` or `llm.think`.
        function: &'static str,
        /// The variable the settings name.
        variable: String,
    },
    /// The provider failed.
    #[error("{function}: the LLM at {url} ({kind}) failed: {reason}")]
    Provider {
        /// `llm.ask` or `llm.think`.
        function: &'static str,
        /// `anthropic` or `openai`.
        kind: &'static str,
        /// The settings' `url`.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// No answer in time.
    #[error("{function}: the LLM did not answer within {limit_ms} ms, the time {by} left it")]
    Timeout {
        /// `llm.ask` or `llm.think`.
        function: &'static str,
        /// The time it had.
        limit_ms: u128,
        /// What limited it.
        by: &'static str,
    },
    /// The execution ended first.
    #[error("{function}: the execution ended before the LLM answered")]
    Cancelled {
        /// `llm.ask` or `llm.think`.
        function: &'static str,
    },
}

impl LlmError {
    /// The outcome the audit log records: `refused` (never sent), `timeout`, `cancelled` or
    /// `error`.
    pub(crate) fn outcome(&self) -> &'static str {
        match self {
            Self::Rounds { .. }
            | Self::Tokens { .. }
            | Self::TokensSpent { .. }
            | Self::SystemPrompt { .. }
            | Self::NoSampling { .. }
            | Self::NoClient { .. }
            | Self::NoKey { .. } => "refused",
            Self::Timeout { .. } => "timeout",
            Self::Cancelled { .. } => "cancelled",
            Self::Sampling { .. } | Self::Provider { .. } => "error",
        }
    }
}
