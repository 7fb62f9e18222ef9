//! Reading one message from an upstream server: what it is, or exactly what is wrong with it.
//!
//! rmcp decodes JSON-RPC itself, and drops without a word what it cannot decode: a line that is
//! not JSON, a message nested deeper than serde_json's default limit, an error without a message,
//! `"jsonrpc": "1.0"`, a `tools/list` answer with one bad tool. The call that message answered
//! then waits for its timeout, and the server is blamed for not answering. Every transport here
//! hands the bytes of each message to [`decode`] first, which says what they are:
//!
//! - a message rmcp can take ([`Decoded::Message`]), checked against the request it answers: the
//!   answer to `tools/call` must be a tool result, to `initialize` an initialize result;
//! - a `tools/list` answer with the definitions that are not valid tools left out, each named with
//!   its fault (a definition nested too deep, a missing input schema, no name);
//! - or a message that cannot be used ([`Decoded::Malformed`]), with the id it names when one can
//!   be found in it (even in JSON cut short, or in bytes that are not UTF-8), so the request it
//!   answers fails at once with the cause;
//! - or a request of the server's that cannot be read ([`Decoded::UnreadableRequest`]): its id is
//!   the server's own, not one of toolweave's, and the server is answered with what was wrong.
//!
//! Nesting is bounded before anything is parsed: one pass over the bytes counts it (and finds the
//! id), and only a message within [`MAX_MESSAGE_DEPTH`] is parsed as a whole. A deeper
//! `tools/list` answer is read tool by tool with serde_json's raw values, which skip nested JSON
//! without recursion, so one absurdly deep tool costs that tool only.

use rmcp::model::{
    CallToolResult, InitializeResult, JsonRpcResponse, JsonRpcVersion2_0, ListToolsResult,
    RequestId, ServerJsonRpcMessage, ServerResult, Tool,
};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::Malformed;

/// The deepest a message from an upstream server may nest, counting its objects and arrays (the
/// message itself is level 1). serde_json, which rmcp reads messages with, stops at 127.
pub(crate) const MAX_MESSAGE_DEPTH: usize = 100;

/// The deepest one tool definition may nest: a `tools/list` answer holds tool definitions at level
/// 4 (the message, its result, the tools array), and must fit [`MAX_MESSAGE_DEPTH`].
pub(crate) const MAX_TOOL_DEPTH: usize = MAX_MESSAGE_DEPTH - 3;

/// A UTF-8 byte order mark, which JSON readers may skip.
const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// What a request asked for, which decides what its answer must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// `initialize`: an initialize result.
    Initialize,
    /// `tools/list`: a list of tools.
    ListTools,
    /// `tools/call`: a tool result.
    CallTool,
    /// Anything else: whatever rmcp accepts.
    Other,
}

impl Method {
    /// The method of a request named `name`.
    pub(crate) fn of(name: &str) -> Self {
        match name {
            "initialize" => Self::Initialize,
            "tools/list" => Self::ListTools,
            "tools/call" => Self::CallTool,
            _ => Self::Other,
        }
    }

    /// Its name on the wire (`the request` for others).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Initialize => "initialize",
            Self::ListTools => "tools/list",
            Self::CallTool => "tools/call",
            Self::Other => "the request",
        }
    }
}

/// A tool definition left out of a `tools/list` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DroppedTool {
    /// Its name, when it has one that is a string.
    pub(crate) name: Option<String>,
    /// What is wrong with it.
    pub(crate) fault: String,
}

/// What the bytes of one message are.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one value per message, moved once: boxing the message would allocate for each"
)]
pub(crate) enum Decoded {
    /// A message for rmcp.
    Message {
        /// The message.
        message: ServerJsonRpcMessage,
        /// Whether it differs from the bytes (tools were left out), so a transport that hands
        /// rmcp text must write it anew.
        rewritten: bool,
        /// The tool definitions left out of a `tools/list` answer.
        dropped: Vec<DroppedTool>,
    },
    /// Bytes that are no usable message.
    Malformed {
        /// The id the message names, when it names one that could be read.
        id: Option<RequestId>,
        /// What is wrong.
        malformed: Malformed,
    },
    /// A request from the server (it has a `method` and an `id`) that cannot be read.
    UnreadableRequest {
        /// The server's id for it.
        id: RequestId,
        /// Its method.
        method: String,
        /// What is wrong.
        malformed: Malformed,
    },
}

impl Decoded {
    fn message(message: ServerJsonRpcMessage) -> Self {
        Self::Message {
            message,
            rewritten: false,
            dropped: Vec::new(),
        }
    }
}

/// Decodes the bytes of one message. `answers` says what the request with a given id asked for,
/// when toolweave sent one with that id (of that very JSON type) and has no answer yet.
pub(crate) fn decode(bytes: &[u8], answers: impl Fn(&RequestId) -> Option<Method>) -> Decoded {
    let bytes = bytes.strip_prefix(BYTE_ORDER_MARK).unwrap_or(bytes);
    let scan = scan(bytes);
    let method = scan.id.as_ref().and_then(&answers);
    let malformed = |malformed| match (&scan.id, &scan.method) {
        // A request of the server's: its id is the server's, whatever toolweave's ids are.
        (Some(id), Some(method)) => Decoded::UnreadableRequest {
            id: id.clone(),
            method: method.clone(),
            malformed,
        },
        _ => Decoded::Malformed {
            id: scan.id.clone(),
            malformed,
        },
    };
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => {
            return malformed(Malformed::InvalidUtf8 {
                offset: error.valid_up_to(),
            });
        }
    };
    if scan.depth > MAX_MESSAGE_DEPTH {
        // A tool list is read tool by tool, so one deep definition costs only that tool.
        let is_answer = || {
            serde_json::from_str::<Envelope<'_>>(text)
                .is_ok_and(|envelope| envelope.result.is_some())
        };
        if method == Some(Method::ListTools) && is_answer() {
            return list_tools(text);
        }
        return malformed(Malformed::TooDeep {
            depth: scan.depth,
            limit: MAX_MESSAGE_DEPTH,
        });
    }
    if method == Some(Method::CallTool)
        && let Some(id) = &scan.id
        && let Some(message) = tool_result(text, id)
    {
        return Decoded::message(message);
    }
    match serde_json::from_str::<ServerJsonRpcMessage>(text) {
        Ok(message) => check(message, method, text),
        Err(error) if error.is_syntax() || error.is_eof() => malformed(Malformed::InvalidJson {
            detail: error.to_string(),
        }),
        Err(error) => match diagnose(text, method, &error) {
            Diagnosis::ListTools => list_tools(text),
            Diagnosis::Malformed(found) => malformed(found),
        },
    }
}

/// The answer to `tools/call` `id` read as a tool result directly, when it is one. rmcp reads
/// a message as an untagged union, which first copies all of it (every string of a large result
/// once more) before it tries each kind; read directly, a result of 50 MB of text holds two copies
/// at its peak (the bytes and the result) instead of three. `None`: anything else, which the
/// general reading then explains.
fn tool_result(text: &str, id: &RequestId) -> Option<ServerJsonRpcMessage> {
    /// An answer to `tools/call`, read in one pass.
    #[derive(Deserialize)]
    struct ToolAnswer<'a> {
        #[serde(borrow)]
        jsonrpc: Option<&'a RawValue>,
        id: Option<RequestId>,
        method: Option<serde::de::IgnoredAny>,
        error: Option<serde::de::IgnoredAny>,
        result: Option<CallToolResult>,
    }
    let answer = serde_json::from_str::<ToolAnswer<'_>>(text).ok()?;
    let plain = answer.jsonrpc.map(RawValue::get) == Some("\"2.0\"")
        && answer.method.is_none()
        && answer.error.is_none()
        && answer.id.as_ref() == Some(id);
    if !plain {
        return None;
    }
    Some(ServerJsonRpcMessage::Response(JsonRpcResponse {
        jsonrpc: JsonRpcVersion2_0,
        id: id.clone(),
        result: ServerResult::CallToolResult(answer.result?),
    }))
}

/// Checks a message rmcp read against the request it answers: its result must be of the kind the
/// request asked for (rmcp reads results as an untagged union, whose last member takes any object).
fn check(message: ServerJsonRpcMessage, method: Option<Method>, text: &str) -> Decoded {
    let (ServerJsonRpcMessage::Response(response), Some(method)) = (&message, method) else {
        return Decoded::message(message);
    };
    let fits = match method {
        Method::ListTools => matches!(response.result, ServerResult::ListToolsResult(_)),
        Method::CallTool => matches!(
            response.result,
            ServerResult::CallToolResult(_)
                | ServerResult::CreateTaskResult(_)
                | ServerResult::InputRequiredResult(_)
                | ServerResult::EmptyResult(_)
        ),
        Method::Initialize => matches!(response.result, ServerResult::InitializeResult(_)),
        Method::Other => true,
    };
    if fits {
        return Decoded::message(message);
    }
    if method == Method::ListTools {
        return list_tools(text);
    }
    Decoded::Malformed {
        id: Some(response.id.clone()),
        malformed: Malformed::InvalidResult {
            method: method.name(),
            detail: result_fault(text, method),
        },
    }
}

/// The top level of a message, its members left unparsed.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// The members of a JSON-RPC error that make it one.
#[derive(Deserialize)]
struct ErrorMembers<'a> {
    #[serde(borrow)]
    code: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
}

enum Diagnosis {
    /// A `tools/list` answer that needs reading tool by tool.
    ListTools,
    /// What is wrong.
    Malformed(Malformed),
}

/// Why valid JSON within the depth bound is no message rmcp reads (`error` is rmcp's reason).
fn diagnose(text: &str, method: Option<Method>, error: &serde_json::Error) -> Diagnosis {
    let envelope = match serde_json::from_str::<Envelope<'_>>(text) {
        Ok(envelope) => envelope,
        Err(_) => {
            return Diagnosis::Malformed(Malformed::NotAMessage {
                detail: format!("{} where a JSON object was expected", json_kind(text)),
            });
        }
    };
    match envelope.jsonrpc.map(RawValue::get) {
        Some("\"2.0\"") => {}
        found => {
            return Diagnosis::Malformed(Malformed::NotJsonRpc {
                version: found.map(|version| cut(version, 40)),
            });
        }
    }
    let id = envelope.id.map(RawValue::get).filter(|id| *id != "null");
    if let Some(id) = id
        && serde_json::from_str::<RequestId>(id).is_err()
    {
        return Diagnosis::Malformed(Malformed::NotAMessage {
            detail: format!(
                "its \"id\" {} is neither a string nor an integer",
                cut(id, 40)
            ),
        });
    }
    if envelope.result.is_some() && id.is_none() {
        return Diagnosis::Malformed(Malformed::NotAMessage {
            detail: "an answer without an id".to_owned(),
        });
    }
    if let Some(error_value) = envelope.error {
        return Diagnosis::Malformed(error_fault(error_value).unwrap_or_else(|| {
            Malformed::NotAMessage {
                detail: error.to_string(),
            }
        }));
    }
    if envelope.result.is_some() {
        let method = method.unwrap_or(Method::Other);
        if method == Method::ListTools {
            return Diagnosis::ListTools;
        }
        return Diagnosis::Malformed(Malformed::InvalidResult {
            method: method.name(),
            detail: result_fault(text, method),
        });
    }
    if let Some(name) = envelope.method {
        return Diagnosis::Malformed(Malformed::NotAMessage {
            detail: format!(
                "a request or notification {} that does not read: {error}",
                cut(name.get(), 80)
            ),
        });
    }
    Diagnosis::Malformed(Malformed::NotAMessage {
        detail: "it has none of \"method\", \"result\" and \"error\"".to_owned(),
    })
}

/// What is wrong with a JSON-RPC error object, if anything.
fn error_fault(error: &RawValue) -> Option<Malformed> {
    let Ok(members) = serde_json::from_str::<ErrorMembers<'_>>(error.get()) else {
        return Some(Malformed::ErrorWithoutMessage);
    };
    let message_is_text = members
        .message
        .is_some_and(|message| serde_json::from_str::<String>(message.get()).is_ok());
    if !message_is_text {
        return Some(Malformed::ErrorWithoutMessage);
    }
    let code_is_integer = members
        .code
        .is_some_and(|code| serde_json::from_str::<i32>(code.get()).is_ok());
    (!code_is_integer).then(|| Malformed::NotAMessage {
        detail: "a JSON-RPC error whose \"code\" is not an integer".to_owned(),
    })
}

/// Why the result of an answer to `method` is not the kind that method asks for.
fn result_fault(text: &str, method: Method) -> String {
    let Some(result) = serde_json::from_str::<Envelope<'_>>(text)
        .ok()
        .and_then(|envelope| envelope.result)
    else {
        return "it has no result".to_owned();
    };
    let fault = match method {
        Method::CallTool => serde_json::from_str::<CallToolResult>(result.get()).err(),
        Method::Initialize => serde_json::from_str::<InitializeResult>(result.get()).err(),
        Method::ListTools => serde_json::from_str::<ListToolsResult>(result.get()).err(),
        Method::Other => None,
    };
    fault.map_or_else(
        || format!("{} of another kind", json_kind(result.get())),
        |fault| without_position(&fault),
    )
}

/// A `tools/list` answer: the parts of its result toolweave uses.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolsPage<'a> {
    #[serde(borrow)]
    tools: Vec<&'a RawValue>,
    next_cursor: Option<String>,
}

/// A tool definition's name, whatever else it holds.
#[derive(Deserialize)]
struct Named<'a> {
    #[serde(borrow)]
    name: Option<&'a RawValue>,
}

/// Reads a `tools/list` answer tool by tool, leaving out each definition that is not a valid tool
/// (or nests deeper than [`MAX_TOOL_DEPTH`]).
fn list_tools(text: &str) -> Decoded {
    #[derive(Deserialize)]
    struct Answer<'a> {
        #[serde(borrow)]
        jsonrpc: Option<&'a RawValue>,
        id: RequestId,
        #[serde(borrow)]
        result: &'a RawValue,
    }
    let answer = match serde_json::from_str::<Answer<'_>>(text) {
        Ok(answer) => answer,
        Err(error) => {
            let malformed = if error.is_syntax() || error.is_eof() {
                Malformed::InvalidJson {
                    detail: error.to_string(),
                }
            } else {
                Malformed::NotAMessage {
                    detail: error.to_string(),
                }
            };
            return Decoded::Malformed {
                id: scan(text.as_bytes()).id,
                malformed,
            };
        }
    };
    let fail = |malformed| Decoded::Malformed {
        id: Some(answer.id.clone()),
        malformed,
    };
    if answer.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
        return fail(Malformed::NotJsonRpc {
            version: answer.jsonrpc.map(|version| cut(version.get(), 40)),
        });
    }
    let page = match serde_json::from_str::<ToolsPage<'_>>(answer.result.get()) {
        Ok(page) => page,
        Err(error) => {
            return fail(Malformed::InvalidResult {
                method: Method::ListTools.name(),
                detail: error.to_string(),
            });
        }
    };
    let mut tools = Vec::with_capacity(page.tools.len());
    let mut dropped = Vec::new();
    for definition in page.tools {
        match read_tool(definition.get()) {
            Ok(tool) => tools.push(tool),
            Err(fault) => dropped.push(DroppedTool {
                name: tool_name(definition.get()),
                fault,
            }),
        }
    }
    let mut result = ListToolsResult::with_all_items(tools);
    result.next_cursor = page.next_cursor;
    Decoded::Message {
        message: ServerJsonRpcMessage::response(ServerResult::ListToolsResult(result), answer.id),
        rewritten: true,
        dropped,
    }
}

/// One tool definition, or what is wrong with it.
fn read_tool(definition: &str) -> Result<Tool, String> {
    let depth = scan(definition.as_bytes()).depth;
    if depth > MAX_TOOL_DEPTH {
        return Err(format!(
            "its definition nests {depth} levels deep, deeper than the {MAX_TOOL_DEPTH} toolweave reads"
        ));
    }
    serde_json::from_str::<Tool>(definition)
        .map_err(|error| format!("it is not a valid tool ({})", without_position(&error)))
}

/// serde_json's message without its `at line 1 column 20`, which says nothing about a part of a
/// message.
fn without_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    text.strip_suffix(&position).unwrap_or(&text).to_owned()
}

/// The name of a tool definition, when it has one that is a string.
fn tool_name(definition: &str) -> Option<String> {
    let named = serde_json::from_str::<Named<'_>>(definition).ok()?;
    serde_json::from_str::<String>(named.name?.get()).ok()
}

/// What a JSON text is, by its first character: `a JSON array`, `a string`...
fn json_kind(text: &str) -> &'static str {
    match text.trim_start().as_bytes().first() {
        Some(b'{') => "an object",
        Some(b'[') => "a JSON array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        Some(_) => "a number",
        None => "nothing",
    }
}

/// `text` cut to about `max` bytes, on a character boundary.
fn cut(text: &str, max: usize) -> String {
    toolweave_jsonrpc::text::cut_marked(text.to_owned(), max, "…")
}

/// What one pass over a message's bytes finds before any parsing.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Scan {
    /// How deep its objects and arrays nest (0 for a scalar).
    pub(crate) depth: usize,
    /// The `id` member of the top-level object, when it is a number or a string.
    pub(crate) id: Option<RequestId>,
    /// The `method` member of the top-level object, when it is a string: the message is a
    /// request or a notification, not an answer.
    pub(crate) method: Option<String>,
}

/// Counts how deep `bytes` nest and finds the top-level `id` and `method`, without parsing
/// (`toolweave_jsonrpc::id`): it works on JSON cut short and on bytes that are not UTF-8, so an
/// answer that cannot be read can still be tied to its request.
pub(crate) fn scan(bytes: &[u8]) -> Scan {
    let scanner = toolweave_jsonrpc::id::scan(bytes);
    Scan {
        depth: scanner.depth(),
        id: scanner
            .id_text()
            .and_then(|text| serde_json::from_slice::<RequestId>(text).ok()),
        method: scanner.method(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;
    use serde_json::json;

    fn number(id: i64) -> Option<RequestId> {
        Some(NumberOrString::Number(id))
    }

    #[test]
    fn a_scan_finds_depth_and_id_in_what_does_not_parse() {
        let scanned =
            scan(br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"cut"#);
        assert_eq!(
            scanned,
            Scan {
                depth: 4,
                id: number(7),
                method: None,
            }
        );
        // A request names its method; one nested deeper, or a key's text, is not the message's.
        let scanned = scan(
            br#"{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{"method":"x"}"#,
        );
        assert_eq!(scanned.method.as_deref(), Some("elicitation/create"));
        assert_eq!(scanned.id, number(0));
        assert_eq!(scan(br#"{"result":{"method":"x"},"id":1}"#).method, None);
        assert_eq!(scan(br#"{"x":"method","method":7}"#).method, None);
        // The id last, as some servers write it; strings with brackets, quotes and escapes.
        let scanned = scan(br#"{"result":{"text":"[{\"id\":9}]\\"},"id" : "abc"}"#);
        assert_eq!(scanned.depth, 2);
        assert_eq!(scanned.id, Some(NumberOrString::String("abc".into())));
        // Not UTF-8, and an id nested deeper is not the message's.
        let scanned = scan(b"{\"result\":{\"id\":3,\"t\":\"\xff\"},\"id\":4}");
        assert_eq!(scanned.id, number(4));
        // An id that is neither a number nor a string is no id.
        assert_eq!(scan(br#"{"id":null,"error":{}}"#).id, None);
        assert_eq!(scan(br#"{"id":[1]}"#).id, None);
        // A key that only contains "id" is not the id.
        assert_eq!(scan(br#"{"idx":5,"x":"id"}"#).id, None);
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        assert_eq!(scan(deep.as_bytes()).depth, 5000);
    }

    fn pending(method: Method) -> impl Fn(&RequestId) -> Option<Method> {
        move |id| (*id == NumberOrString::Number(7)).then_some(method)
    }

    fn fault(bytes: &[u8], method: Method) -> (Option<RequestId>, String) {
        match decode(bytes, pending(method)) {
            Decoded::Malformed { id, malformed } => (id, malformed.to_string()),
            Decoded::Message { message, .. } => panic!("read as a message: {message:?}"),
            Decoded::UnreadableRequest { method, .. } => panic!("read as a request: {method}"),
        }
    }

    #[test]
    fn a_request_of_the_servers_that_cannot_be_read_keeps_its_own_id() {
        // The id 7 is also one of toolweave's waiting requests: this is not its answer.
        let bytes =
            br#"{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"maxTokens":"#;
        let decoded = decode(bytes, pending(Method::CallTool));
        let Decoded::UnreadableRequest {
            id,
            method,
            malformed,
        } = decoded
        else {
            panic!("not read as a request: {decoded:?}");
        };
        assert_eq!(
            (id, method.as_str()),
            (NumberOrString::Number(7), "sampling/createMessage")
        );
        assert!(
            malformed
                .to_string()
                .starts_with("invalid JSON (EOF while parsing"),
            "{malformed}"
        );
        // A notification that cannot be read has no id to answer: it is only reported.
        let bytes = br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"#;
        assert!(matches!(
            decode(bytes, pending(Method::CallTool)),
            Decoded::Malformed { id: None, .. }
        ));
    }

    #[test]
    fn each_fault_is_named_with_the_id_it_answers() {
        let (id, text) = fault(
            br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"ty"#,
            Method::CallTool,
        );
        assert_eq!(id, number(7));
        assert!(
            text.starts_with("invalid JSON (EOF while parsing a string at line 1 column"),
            "{text}"
        );

        let (id, text) = fault(
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"text\":\"\xff\"}}",
            Method::CallTool,
        );
        assert_eq!((id, text.as_str()), (number(7), "invalid UTF-8 at byte 42"));

        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[],"structuredContent":{{"a":{}{}}}}}}}"#,
            "[".repeat(127),
            "]".repeat(127)
        );
        let (id, text) = fault(deep.as_bytes(), Method::CallTool);
        assert_eq!(id, number(7));
        assert_eq!(
            text,
            "a message nested 130 levels deep, deeper than the 100 toolweave reads"
        );

        let (id, text) = fault(
            br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32000}}"#,
            Method::CallTool,
        );
        assert_eq!(
            (id, text.as_str()),
            (number(7), "a JSON-RPC error without a message")
        );
        let (_, text) = fault(
            br#"{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":5}}"#,
            Method::CallTool,
        );
        assert_eq!(text, "a JSON-RPC error without a message");

        let (id, text) = fault(
            br#"{"jsonrpc":"1.0","id":7,"result":{"content":[]}}"#,
            Method::CallTool,
        );
        assert_eq!(
            (id, text.as_str()),
            (number(7), "not JSON-RPC 2.0 (its \"jsonrpc\" is \"1.0\")")
        );
        let (_, text) = fault(br#"{"id":7,"result":{"content":[]}}"#, Method::CallTool);
        assert_eq!(text, "not JSON-RPC 2.0 (it has no \"jsonrpc\": \"2.0\")");

        let (id, text) = fault(
            br#"{"jsonrpc":"2.0","id":7,"result":{"content":"text"}}"#,
            Method::CallTool,
        );
        assert_eq!(id, number(7));
        assert!(
            text.starts_with("an answer to tools/call that is not a tool result (invalid type: string \"text\", expected a sequence"),
            "{text}"
        );
        let (_, text) = fault(
            br#"{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}"#,
            Method::Initialize,
        );
        assert!(
            text.starts_with(
                "an answer to initialize that is not an initialize result (missing field"
            ),
            "{text}"
        );

        let (id, text) = fault(b"[1,2]", Method::CallTool);
        assert_eq!(
            (id, text.as_str()),
            (
                None,
                "not a JSON-RPC message (a JSON array where a JSON object was expected)"
            )
        );
        let (id, text) = fault(
            br#"{"jsonrpc":"2.0","id":7.5,"result":{}}"#,
            Method::CallTool,
        );
        assert_eq!(
            (id, text.as_str()),
            (
                None,
                "not a JSON-RPC message (its \"id\" 7.5 is neither a string nor an integer)"
            )
        );
        let (_, text) = fault(
            br#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            Method::CallTool,
        );
        assert_eq!(text, "not a JSON-RPC message (an answer without an id)");
        let (_, text) = fault(br#"{"jsonrpc":"2.0","id":7}"#, Method::CallTool);
        assert_eq!(
            text,
            "not a JSON-RPC message (it has none of \"method\", \"result\" and \"error\")"
        );
    }

    #[test]
    fn good_messages_pass_as_they_are() {
        let text = json!({ "jsonrpc": "2.0", "id": 7, "result": { "content": [{ "type": "text", "text": "hi" }] } }).to_string();
        let Decoded::Message {
            message,
            rewritten,
            dropped,
        } = decode(text.as_bytes(), pending(Method::CallTool))
        else {
            panic!("not read");
        };
        assert!(!rewritten && dropped.is_empty());
        assert!(
            matches!(message, ServerJsonRpcMessage::Response(ref response) if matches!(response.result, ServerResult::CallToolResult(_)))
        );
        // A byte order mark is skipped; a notification needs no request.
        let text = "\u{feff}{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}";
        assert!(matches!(
            decode(text.as_bytes(), |_| None),
            Decoded::Message { .. }
        ));
        // An answer nobody waits for is still read (the caller decides what to do with it).
        let text = r#"{"jsonrpc":"2.0","id":"7","result":{}}"#;
        assert!(matches!(
            decode(text.as_bytes(), pending(Method::CallTool)),
            Decoded::Message { .. }
        ));
    }

    fn tools_of(decoded: Decoded) -> (Vec<String>, Vec<DroppedTool>) {
        let Decoded::Message {
            message: ServerJsonRpcMessage::Response(response),
            rewritten,
            dropped,
        } = decoded
        else {
            panic!("not a response: {decoded:?}");
        };
        // Rewritten exactly when something was left out.
        assert_eq!(rewritten, !dropped.is_empty());
        let ServerResult::ListToolsResult(result) = response.result else {
            panic!("not a tool list");
        };
        (
            result
                .tools
                .iter()
                .map(|tool| tool.name.to_string())
                .collect(),
            dropped,
        )
    }

    #[test]
    fn bad_tool_definitions_are_left_out_one_by_one() {
        let schema = json!({ "type": "object" });
        let text = json!({ "jsonrpc": "2.0", "id": 7, "result": { "nextCursor": "2", "tools": [
            { "name": "good", "inputSchema": schema },
            { "name": "no_schema" },
            { "name": "schema_is_text", "inputSchema": "object" },
            { "inputSchema": schema },
            { "name": 42, "inputSchema": schema },
            { "name": "also_good", "inputSchema": schema },
        ] } })
        .to_string();
        let (names, dropped) = tools_of(decode(text.as_bytes(), pending(Method::ListTools)));
        assert_eq!(names, ["good", "also_good"]);
        let dropped: Vec<(Option<&str>, &str)> = dropped
            .iter()
            .map(|tool| (tool.name.as_deref(), tool.fault.as_str()))
            .collect();
        assert_eq!(
            dropped,
            [
                (
                    Some("no_schema"),
                    "it is not a valid tool (missing field `inputSchema`)"
                ),
                (
                    Some("schema_is_text"),
                    "it is not a valid tool (invalid type: string \"object\", expected a map)"
                ),
                (None, "it is not a valid tool (missing field `name`)"),
                (
                    None,
                    "it is not a valid tool (invalid type: integer `42`, expected a string)"
                ),
            ]
        );
    }

    #[test]
    fn a_tool_nested_too_deep_is_left_out_however_deep() {
        // The tool, then two levels per "properties": 97 levels, the most a tool may have, and
        // far more.
        for properties in [48, 100_000] {
            let schema = format!(
                "{}1{}",
                r#"{"properties":{"a":"#.repeat(properties),
                "}}".repeat(properties)
            );
            let text = format!(
                r#"{{"jsonrpc":"2.0","id":7,"result":{{"tools":[{{"name":"deep","inputSchema":{schema}}},{{"name":"ok","inputSchema":{{}}}}]}}}}"#
            );
            let (names, dropped) = tools_of(decode(text.as_bytes(), pending(Method::ListTools)));
            let depth = 1 + 2 * properties;
            if depth <= MAX_TOOL_DEPTH {
                assert_eq!(depth, MAX_TOOL_DEPTH);
                assert_eq!(names, ["deep", "ok"]);
                assert!(dropped.is_empty());
            } else {
                assert_eq!(names, ["ok"]);
                assert_eq!(
                    dropped,
                    [DroppedTool {
                        name: Some("deep".to_owned()),
                        fault: format!(
                            "its definition nests {depth} levels deep, deeper than the 97 toolweave reads"
                        ),
                    }]
                );
            }
        }
        // An answer too deep to anything but a tools/list is refused whole.
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"x":{}{}}}}}"#,
            "[".repeat(200_000),
            "]".repeat(200_000)
        );
        let (_, text) = fault(text.as_bytes(), Method::CallTool);
        assert_eq!(
            text,
            "a message nested 200002 levels deep, deeper than the 100 toolweave reads"
        );
    }

    /// What reading costs next to rmcp's own parse of the same bytes (which this replaces):
    /// `cargo test --release -p toolweave-upstream --lib measure_decoding -- --ignored
    /// --nocapture`.
    #[test]
    #[ignore = "a measurement; run it in release"]
    fn measure_decoding() {
        use std::time::Instant;
        let text_answer = |bytes: usize| {
            json!({ "jsonrpc": "2.0", "id": 7, "result": { "content": [{ "type": "text", "text": "x".repeat(bytes) }] } })
                .to_string()
        };
        let tool = |index: usize| json!({ "name": format!("tool_{index}"), "description": "Does a thing with the arguments it is given.", "inputSchema": { "type": "object", "properties": { "a": { "type": "string", "description": "The first." }, "b": { "type": "object", "properties": { "c": { "type": "integer" } } } }, "required": ["a"] } });
        let tools = json!({ "jsonrpc": "2.0", "id": 7, "result": { "tools": (0..200).map(tool).collect::<Vec<_>>() } }).to_string();
        let structured = json!({ "jsonrpc": "2.0", "id": 7, "result": { "content": [], "structuredContent": { "rows": (0..20_000).map(|row| json!({ "id": row, "name": format!("row {row}"), "tags": ["a", "b"] })).collect::<Vec<_>>() } } }).to_string();
        let cases = [
            ("small answer", text_answer(100), Method::CallTool),
            ("1 MB text", text_answer(1 << 20), Method::CallTool),
            ("16 MB text", text_answer(16 << 20), Method::CallTool),
            ("1 MB structured", structured, Method::CallTool),
            ("200 tools", tools, Method::ListTools),
        ];
        for (label, text, method) in cases {
            let runs = (64 << 20) / text.len().max(1 << 10);
            let median = |mut samples: Vec<f64>| {
                samples.sort_by(f64::total_cmp);
                samples[samples.len() / 2]
            };
            let mut ours = Vec::new();
            let mut rmcp = Vec::new();
            for _ in 0..runs.clamp(5, 2000) {
                let started = Instant::now();
                let decoded = decode(text.as_bytes(), |_| Some(method));
                ours.push(started.elapsed().as_secs_f64() * 1e6);
                assert!(matches!(decoded, Decoded::Message { .. }));
                let started = Instant::now();
                let parsed = serde_json::from_slice::<ServerJsonRpcMessage>(text.as_bytes());
                rmcp.push(started.elapsed().as_secs_f64() * 1e6);
                assert!(parsed.is_ok());
            }
            println!(
                "{label:>16} ({:>9} bytes): read {:>10.1} µs, rmcp's parse alone {:>10.1} µs",
                text.len(),
                median(ours),
                median(rmcp)
            );
        }
    }
}
