//! What a client sent, decoded: an MCP message for rmcp, or the JSON-RPC error that answers it.
//!
//! rmcp drops what it cannot decode: text that is not JSON (a request carrying a lone surrogate
//! escape such as `"\ud800"` is not JSON serde_json accepts), and answers well-formed JSON that is
//! no message with an "Invalid request" addressed to nobody, so the client cannot tell which
//! request failed. Both transports decode with [`decode`] first: lone surrogate escapes are
//! replaced, and what still cannot be served gets an error that names the request's id when it
//! can be found, the JSON-RPC code, and what is wrong.

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ErrorCode, InitializeRequestParams,
    PaginatedRequestParams, SetLevelRequestParams,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use toolweave_config::json_kind;

pub(crate) use toolweave_jsonrpc::surrogates::without_lone_surrogate_escapes;

/// The byte order mark some writers put first; JSON allows a reader to skip it.
const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// Notifications MCP defines from client to server: one of these that does not decode is an
/// error worth a word; any other is ignored, as rmcp ignores notifications MCP does not define
/// (editors send their own).
const CLIENT_NOTIFICATIONS: [&str; 4] = [
    "notifications/cancelled",
    "notifications/initialized",
    "notifications/progress",
    "notifications/roots/list_changed",
];

/// One line or body a client sent.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A message for rmcp's service (boxed: it is much larger than the other variants).
    Message(Box<ClientJsonRpcMessage>),
    /// Nothing to do: a blank line, or a notification MCP does not define.
    Skip,
    /// Something that cannot be served, and the error that says why.
    Invalid(Invalid),
}

/// Input that cannot be served, and the JSON-RPC error that answers it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Invalid {
    /// Who the answer goes to: the request's id; `null` for JSON that is no message object (or
    /// whose id is not one); none when nothing asked for an answer (a notification or response
    /// that does not decode, text with no id to be found).
    pub(crate) reply_to: Option<Value>,
    /// The JSON-RPC error code.
    pub(crate) code: ErrorCode,
    /// What is wrong, and what to send instead.
    pub(crate) message: String,
}

impl Invalid {
    /// The error `code` with `message`, answering `reply_to` (see the field).
    pub(crate) fn new(reply_to: Option<Value>, code: ErrorCode, message: String) -> Self {
        Self {
            reply_to,
            code,
            message,
        }
    }

    /// The JSON-RPC error answer, addressed to the request (`"id": null` when there is none).
    pub(crate) fn answer(&self) -> Value {
        json!({
            "jsonrpc": "2.0",
            "id": self.reply_to.clone().unwrap_or(Value::Null),
            "error": { "code": self.code.0, "message": self.message },
        })
    }
}

/// The most arguments (members of `params.arguments`) one request may carry. No tool takes
/// nearly so many; a request with more is refused before it is decoded, since decoding (one map
/// entry and one warning per argument) would take a second per million.
pub(crate) const MAX_ARGUMENTS: usize = 10_000;

/// Decodes one message. Lone surrogate escapes are replaced by `\ufffd` first when they are what
/// keeps the text from decoding.
pub(crate) fn decode(text: &[u8]) -> Incoming {
    let text = text.strip_prefix(BYTE_ORDER_MARK).unwrap_or(text);
    if text.iter().all(u8::is_ascii_whitespace) {
        return Incoming::Skip;
    }
    if let Some(refused) = too_many_arguments(text) {
        return Incoming::Invalid(refused);
    }
    if let Some(refused) = malformed_retry(text) {
        return Incoming::Invalid(refused);
    }
    let error = match serde_json::from_slice(text) {
        Ok(message) => return Incoming::Message(Box::new(message)),
        Err(error) => error,
    };
    if error.is_syntax()
        && let std::borrow::Cow::Owned(replaced) = without_lone_surrogate_escapes(text)
    {
        return match serde_json::from_slice(&replaced) {
            Ok(message) => Incoming::Message(Box::new(message)),
            Err(error) => explain(&replaced, &error),
        };
    }
    explain(text, &error)
}

/// The refusal of a retry (MCP 2026-07-28) whose `params.inputResponses` is not an object or
/// whose `params.requestState` is not a string. rmcp reads a `null` for either as the field left
/// out, which would run the request anew as a first attempt; the multi round-trip pattern asks a
/// server to answer such protocol errors with a JSON-RPC error. Only a message that names either
/// field is read a second time.
fn malformed_retry(text: &[u8]) -> Option<Invalid> {
    fn names(text: &[u8], field: &[u8]) -> bool {
        text.windows(field.len()).any(|window| window == field)
    }
    if !names(text, b"\"inputResponses\"") && !names(text, b"\"requestState\"") {
        return None;
    }
    let message: Value = serde_json::from_slice(text).ok()?;
    let params = message.get("params")?.as_object()?;
    let id = message.get("id")?;
    let (field, expected) = match (params.get("inputResponses"), params.get("requestState")) {
        (Some(responses), _) if !responses.is_object() => (
            "inputResponses",
            "an object of answers keyed as the InputRequiredResult's inputRequests",
        ),
        (_, Some(state)) if !state.is_string() => (
            "requestState",
            "the string the InputRequiredResult gave, as it gave it",
        ),
        _ => return None,
    };
    let given = &params[field];
    Some(Invalid::new(
        Some(id.clone()),
        ErrorCode::INVALID_PARAMS,
        format!(
            "\"{field}\" is {}; send {expected}, or leave it out on a first attempt",
            json_kind(given)
        ),
    ))
}

/// The refusal of a request whose `params.arguments` has more than [`MAX_ARGUMENTS`] members.
/// Only a message long enough to hold that many is counted (each member takes at least 6 bytes,
/// `"a":0,`), without building anything.
fn too_many_arguments(text: &[u8]) -> Option<Invalid> {
    /// The members of an object, counted.
    struct Count(usize);
    impl<'de> serde::Deserialize<'de> for Count {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct Members;
            impl<'de> serde::de::Visitor<'de> for Members {
                type Value = Count;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<Count, A::Error> {
                    let mut count = 0;
                    while map
                        .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                        .is_some()
                    {
                        count += 1;
                    }
                    Ok(Count(count))
                }
            }
            deserializer.deserialize_map(Members)
        }
    }
    #[derive(serde::Deserialize)]
    struct Params {
        arguments: Option<Count>,
    }
    #[derive(serde::Deserialize)]
    struct Message {
        params: Option<Params>,
    }
    if text.len() < MAX_ARGUMENTS * 6 {
        return None;
    }
    // Whatever does not read this way is explained by the ordinary decoding.
    let count = serde_json::from_slice::<Message>(text)
        .ok()?
        .params?
        .arguments?
        .0;
    (count > MAX_ARGUMENTS).then(|| {
        Invalid::new(
            toolweave_jsonrpc::id::find(text),
            ErrorCode::INVALID_PARAMS,
            format!(
                "\"params.arguments\" has {count} members, more than the {MAX_ARGUMENTS} toolweave \
                 reads in one request; send only the arguments the tool takes (describe_tools \
                 shows them)"
            ),
        )
    })
}

/// Why `text` is not a message rmcp can serve; `error` is what decoding it as one said.
fn explain(text: &[u8], error: &serde_json::Error) -> Incoming {
    let value: Value = match serde_json::from_slice(text) {
        Ok(value) => value,
        Err(syntax) => {
            return Incoming::Invalid(Invalid::new(
                toolweave_jsonrpc::id::find(text),
                ErrorCode::PARSE_ERROR,
                format!("the message is not valid JSON: {syntax}"),
            ));
        }
    };
    let Value::Object(object) = value else {
        let message = if value.is_array() {
            "a message is one JSON object: toolweave does not take batches (arrays); send one message per line".to_owned()
        } else {
            format!("a message must be a JSON object, not {}", json_kind(&value))
        };
        return Incoming::Invalid(Invalid::new(
            Some(Value::Null),
            ErrorCode::INVALID_REQUEST,
            message,
        ));
    };
    match object.get("id") {
        None => explain_notification(&object, error),
        Some(id) => Incoming::Invalid(explain_request(&object, id, error)),
    }
}

/// A message without an id that does not decode: a notification (never answered) or nothing.
fn explain_notification(object: &Map<String, Value>, error: &serde_json::Error) -> Incoming {
    let Some(Value::String(method)) = object.get("method") else {
        return Incoming::Invalid(Invalid::new(
            None,
            ErrorCode::INVALID_REQUEST,
            "the message has no \"method\" and no \"id\"".to_owned(),
        ));
    };
    if !CLIENT_NOTIFICATIONS.contains(&method.as_str()) {
        tracing::debug!(%method, %error, "a notification MCP does not define is ignored");
        return Incoming::Skip;
    }
    Incoming::Invalid(Invalid::new(
        None,
        ErrorCode::INVALID_PARAMS,
        format!("the notification {method:?} is not valid: {error}"),
    ))
}

/// What is wrong with a message that has an id: a request, or a response toolweave cannot read.
fn explain_request(object: &Map<String, Value>, id: &Value, error: &serde_json::Error) -> Invalid {
    let method = object.get("method");
    if method.is_none() && (object.contains_key("result") || object.contains_key("error")) {
        // A response is never answered, whatever is wrong with it.
        return Invalid::new(
            None,
            ErrorCode::INVALID_REQUEST,
            format!("a response toolweave cannot read: {error}"),
        );
    }
    let integer = id.as_i64().is_some() || id.as_f64().is_some_and(|id| id.fract() == 0.0);
    if !(id.is_string() || integer) {
        return Invalid::new(
            Some(Value::Null),
            ErrorCode::INVALID_REQUEST,
            format!(
                "the \"id\" of a request must be a string or an integer, not {}",
                json_kind(id)
            ),
        );
    }
    let reply_to = Some(id.clone());
    let Some(method) = method else {
        return Invalid::new(
            reply_to,
            ErrorCode::INVALID_REQUEST,
            "the request has no \"method\"".to_owned(),
        );
    };
    let Value::String(method) = method else {
        return Invalid::new(
            reply_to,
            ErrorCode::INVALID_REQUEST,
            format!("\"method\" must be a string, not {}", json_kind(method)),
        );
    };
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return Invalid::new(
            reply_to,
            ErrorCode::INVALID_REQUEST,
            "\"jsonrpc\" must be \"2.0\"".to_owned(),
        );
    }
    match object.get("params") {
        Some(params) if !params.is_object() => Invalid::new(
            reply_to,
            ErrorCode::INVALID_PARAMS,
            format!(
                "the params of {method:?} must be a JSON object, not {}",
                json_kind(params)
            ),
        ),
        Some(_) => Invalid::new(
            reply_to,
            ErrorCode::INVALID_PARAMS,
            format!("invalid params for {method:?}: {error}"),
        ),
        None => Invalid::new(
            reply_to,
            ErrorCode::INVALID_REQUEST,
            format!("invalid {method:?} request: {error}"),
        ),
    }
}

/// The methods of the `initialize` era that MCP 2026-07-28 removed, with what replaces each.
/// toolweave serves them in a session opened with `initialize`; a request made in 2026-07-28
/// (its `_meta` names that revision) gets `-32601`, which the HTTP transport answers with `404`.
const REMOVED_IN_2026_07_28: [(&str, &str); 2] = [
    (
        "initialize",
        "each request carries its protocol version and the client's capabilities in _meta",
    ),
    (
        "logging/setLevel",
        "a request asks for log messages with io.modelcontextprotocol/logLevel in its _meta",
    ),
];

/// The error for a request made in MCP 2026-07-28 or later of a method that revision removed,
/// naming what replaces it; `None` for any other method.
pub(crate) fn removed_method(method: &str) -> Option<ErrorData> {
    let (_, instead) = REMOVED_IN_2026_07_28
        .iter()
        .find(|(removed, _)| *removed == method)?;
    Some(ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!(
            "MCP 2026-07-28 has no {method:?} (this request's _meta names that revision): \
             {instead}; a client of 2025-11-25 or earlier sends no such _meta"
        ),
        None,
    ))
}

/// The error for a request rmcp could not match to the method it names: `-32602` with what is
/// wrong for a method toolweave serves (its params did not decode), `-32601` for any other.
pub(crate) fn unserved_request(method: &str, params: Option<&Value>) -> ErrorData {
    let problem = match method {
        "initialize" => params_problem::<InitializeRequestParams>(params, ""),
        "tools/list" => params_problem::<PaginatedRequestParams>(params, ""),
        "tools/call" => params_problem::<CallToolRequestParams>(
            params,
            "; expected {\"name\": \"<tool>\", \"arguments\": {...}}",
        ),
        "logging/setLevel" => params_problem::<SetLevelRequestParams>(
            params,
            "; expected {\"level\": \"info\"} (debug, info, notice, warning, error, critical, alert or emergency)",
        ),
        _ => {
            return ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("toolweave does not serve the method {method:?}"),
                None,
            );
        }
    };
    ErrorData::invalid_params(format!("invalid params for {method:?}: {problem}"), None)
}

/// Why `params` do not decode as `P`, followed by `hint`.
fn params_problem<P: DeserializeOwned>(params: Option<&Value>, hint: &str) -> String {
    let Some(params) = params else {
        return format!("they are missing{hint}");
    };
    match serde_json::from_value::<P>(params.clone()) {
        Err(error) => format!("{error}{hint}"),
        // rmcp refused them for a reason of its own: its words are all there is.
        Ok(_) => format!("they do not fit the method{hint}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(text: impl AsRef<[u8]>) -> Invalid {
        let text = text.as_ref();
        match decode(text) {
            Incoming::Invalid(invalid) => invalid,
            other => panic!("{}: {other:?}", String::from_utf8_lossy(text)),
        }
    }

    /// A call with `count` arguments besides `code`.
    fn call_with(count: usize) -> String {
        let mut arguments = serde_json::Map::new();
        arguments.insert("code".to_owned(), json!("return 1"));
        for index in 0..count {
            arguments.insert(format!("k{index}"), json!(0));
        }
        json!({ "jsonrpc": "2.0", "id": "c-1", "method": "tools/call",
                "params": { "name": "execute_code", "arguments": arguments } })
        .to_string()
    }

    #[test]
    fn arguments_past_the_bound_are_refused_with_the_request_id() {
        assert!(matches!(
            decode(call_with(MAX_ARGUMENTS - 1).as_bytes()),
            Incoming::Message(_)
        ));
        let refused = invalid(call_with(MAX_ARGUMENTS));
        assert_eq!(refused.reply_to, Some(json!("c-1")));
        assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
        assert!(
            refused
                .message
                .starts_with("\"params.arguments\" has 10001 members, more than the 10000"),
            "{}",
            refused.message
        );
    }

    #[test]
    fn messages_decode() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            // A lone surrogate escape, replaced.
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"\ud800"}}}"#,
        ] {
            assert!(
                matches!(decode(text.as_bytes()), Incoming::Message(_)),
                "{text}"
            );
        }
        let Incoming::Message(message) = decode(
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x\ud800","arguments":{}}}"#,
        ) else {
            panic!("not a message");
        };
        let ClientJsonRpcMessage::Request(request) = *message else {
            panic!("not a request");
        };
        let rmcp::model::ClientRequest::CallToolRequest(call) = request.request else {
            panic!("not a call");
        };
        assert_eq!(call.params.name, "x\u{fffd}");
        for text in [
            "",
            "  \r",
            r#"{"jsonrpc":"2.0","method":"$/lsp","params":[1]}"#,
        ] {
            assert!(matches!(decode(text.as_bytes()), Incoming::Skip), "{text}");
        }
    }

    #[test]
    fn requests_that_cannot_be_served_are_answered_with_what_is_wrong() {
        use ErrorCode as Code;
        for (text, reply_to, code, message) in [
            (
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":[1,2]}"#,
                Some(json!(2)),
                Code::INVALID_PARAMS,
                "the params of \"tools/call\" must be a JSON object, not an array",
            ),
            (
                r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":"x"}"#,
                Some(json!("s")),
                Code::INVALID_PARAMS,
                "the params of \"tools/call\" must be a JSON object, not a string",
            ),
            (
                r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
                Some(json!(3)),
                Code::INVALID_REQUEST,
                "\"jsonrpc\" must be \"2.0\"",
            ),
            (
                r#"{"id":4,"method":"ping"}"#,
                Some(json!(4)),
                Code::INVALID_REQUEST,
                "\"jsonrpc\" must be \"2.0\"",
            ),
            (
                r#"{"jsonrpc":"2.0","id":5}"#,
                Some(json!(5)),
                Code::INVALID_REQUEST,
                "the request has no \"method\"",
            ),
            (
                r#"{"jsonrpc":"2.0","id":6,"method":7}"#,
                Some(json!(6)),
                Code::INVALID_REQUEST,
                "\"method\" must be a string, not a number",
            ),
            (
                r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
                Some(Value::Null),
                Code::INVALID_REQUEST,
                "the \"id\" of a request must be a string or an integer, not an object",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                Some(Value::Null),
                Code::INVALID_REQUEST,
                "the \"id\" of a request must be a string or an integer, not a number",
            ),
            (
                r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                Some(Value::Null),
                Code::INVALID_REQUEST,
                "a message is one JSON object: toolweave does not take batches (arrays); send one message per line",
            ),
            (
                "7",
                Some(Value::Null),
                Code::INVALID_REQUEST,
                "a message must be a JSON object, not a number",
            ),
        ] {
            assert_eq!(
                invalid(text),
                Invalid::new(reply_to, code, message.to_owned()),
                "{text}"
            );
        }
    }

    #[test]
    fn text_that_is_not_json_is_answered_when_its_id_can_be_found() {
        let cut = invalid(r#"{"jsonrpc":"2.0","id":17,"method":"ping""#);
        assert_eq!(cut.reply_to, Some(json!(17)));
        assert_eq!(cut.code, ErrorCode::PARSE_ERROR);
        assert!(
            cut.message
                .starts_with("the message is not valid JSON: EOF while parsing an object"),
            "{}",
            cut.message
        );
        let garbage = invalid("this is not json");
        assert_eq!(garbage.reply_to, None);
        assert_eq!(garbage.code, ErrorCode::PARSE_ERROR);
        // Bytes that are not UTF-8 in a string.
        let bytes = invalid(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"\xff\"}");
        assert_eq!(bytes.reply_to, Some(json!(9)));
        assert_eq!(bytes.code, ErrorCode::PARSE_ERROR);
    }

    #[test]
    fn broken_notifications_and_responses_are_not_answered() {
        let notification =
            invalid(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}"#);
        assert_eq!(notification.reply_to, None);
        let response = invalid(r#"{"jsonrpc":"2.0","id":1,"result":5,"error":{}}"#);
        assert_eq!(response.reply_to, None);
    }

    #[test]
    fn the_answer_is_a_json_rpc_error() {
        let answer =
            Invalid::new(Some(json!(2)), ErrorCode::INVALID_PARAMS, "what".to_owned()).answer();
        assert_eq!(
            answer,
            json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "what"}})
        );
        let answer = Invalid::new(None, ErrorCode::PARSE_ERROR, "x".to_owned()).answer();
        assert_eq!(answer["id"], Value::Null);
    }

    #[test]
    fn retries_with_malformed_answers_are_refused() {
        let refused = invalid(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute_code","arguments":{},"inputResponses":null}}"#,
        );
        assert_eq!(refused.reply_to, Some(json!(7)));
        assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
        assert!(
            refused
                .message
                .starts_with("\"inputResponses\" is null; send an object"),
            "{}",
            refused.message
        );
        let refused = invalid(
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"execute_code","arguments":{},"inputResponses":{},"requestState":5}}"#,
        );
        assert!(
            refused.message.starts_with("\"requestState\" is"),
            "{}",
            refused.message
        );
        // Well-formed answers, and the words in an argument, decode as usual.
        for text in [
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"execute_code","arguments":{},"inputResponses":{"q":{"action":"decline"}},"requestState":"s"}}"#,
            r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"execute_code","arguments":{"code":"\"inputResponses\""}}}"#,
        ] {
            assert!(
                matches!(decode(text.as_bytes()), Incoming::Message(_)),
                "{text}"
            );
        }
    }

    #[test]
    fn unserved_requests_name_their_problem() {
        let error = unserved_request("tools/call", Some(&json!({"nam": "x"})));
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(
            error.message,
            "invalid params for \"tools/call\": missing field `name`; expected {\"name\": \"<tool>\", \"arguments\": {...}}"
        );
        let error = unserved_request("tools/call", None);
        assert_eq!(
            error.message,
            "invalid params for \"tools/call\": they are missing; expected {\"name\": \"<tool>\", \"arguments\": {...}}"
        );
        let error = unserved_request("logging/setLevel", Some(&json!({"level": "loud"})));
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(
            error.message.contains("unknown variant `loud`"),
            "{}",
            error.message
        );
        let error = removed_method("initialize").unwrap();
        assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
        assert!(
            error
                .message
                .contains("MCP 2026-07-28 has no \"initialize\""),
            "{}",
            error.message
        );
        assert!(removed_method("logging/setLevel").is_some());
        assert!(removed_method("tools/list").is_none());
        let error = unserved_request("prompts/list", Some(&json!({"cursor": 5})));
        assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
        assert_eq!(
            error.message,
            "toolweave does not serve the method \"prompts/list\""
        );
    }
}
