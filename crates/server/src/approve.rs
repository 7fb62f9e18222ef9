//! Asking the person at the client whether a call of a tool in the ask tier may go ahead, and
//! remembering answers that cover more than one call.
//!
//! A client with form elicitation is asked through it; one without (or any, with `--approval
//! page`) gets toolweave's approval page (`page.rs`): the call waits while the page's address
//! goes to toolweave's log (stderr), to the client as a log notification (logger
//! `toolweave/approval`), to the client as a URL-mode elicitation when it declares that, and to
//! `--approval-browser` when set; `toolweave approve` answers from a terminal. A client that cannot
//! show the page (no URL-mode elicitation) leaves the model to be told: the execution answers
//! early, saying where the call waits and how to pick its answer up (`rounds.rs`).
//!
//! The question offers scopes: this call only, this tool for the rest of this execution, this
//! tool for the rest of the client session, or, for the rest of the session, the calls of this
//! tool whose arguments equal this call's (all of them, or one argument the person picks). An
//! answer with a wider scope is kept (by the execution's [`AskTheClient`], or by the session's
//! [`SessionApprovals`]) and answers later calls it covers without asking. One question is open
//! per session at a time, so calls that run together (`Promise.all` of twenty writes) wait for
//! the first answer instead of asking twenty times.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use rmcp::model::{
    ElicitRequestParams, ElicitationAction, ElicitationSchema, LoggingLevel,
    LoggingMessageNotificationParam,
};
use rmcp::service::ElicitationMode;
use serde_json::{Map, Value, json};
use toolweave_core::{AnsweredVia, Approval, ApprovalRequest, ApprovalScope, Approver};

use crate::forward::ClientPeer;
use crate::page::{ApprovalMode, ApprovalPages, PageAnswer, PendingCall};
use crate::rounds::{PageWait, PageWaits};

/// The most of a call's arguments shown in the question.
const MAX_SHOWN_ARGUMENTS: usize = 2000;

/// The most arguments the question offers to match later calls on, one by one.
const MAX_MATCHED_KEYS: usize = 4;

/// The most of an argument's value a scope's title shows.
const MAX_SHOWN_VALUE: usize = 80;

/// Calls of one tool a `matching` answer approved: those whose arguments equal `values` on
/// `keys` (on all of them, and no others, when `keys` is empty).
#[derive(Debug, Clone)]
struct Pattern {
    tool: String,
    keys: Vec<String>,
    values: Map<String, Value>,
    via: AnsweredVia,
}

impl Pattern {
    fn covers(&self, tool: &str, arguments: &Value) -> bool {
        if self.tool != tool {
            return false;
        }
        let Value::Object(arguments) = arguments else {
            return false;
        };
        if self.keys.is_empty() {
            return *arguments == self.values;
        }
        self.keys
            .iter()
            .all(|key| arguments.get(key).is_some() && arguments.get(key) == self.values.get(key))
    }
}

/// What one client session approved for its rest, and its turn to ask.
#[derive(Debug, Default)]
pub(crate) struct SessionApprovals {
    /// Tools (`server.tool`) approved for the rest of the session, and where.
    tools: Mutex<HashMap<String, AnsweredVia>>,
    /// Calls approved for the rest of the session by their arguments.
    matching: Mutex<Vec<Pattern>>,
    /// Held while a question is open: one question at a time per session.
    asking: tokio::sync::Mutex<()>,
    /// The call whose question is open at the approval page, if one is: a call that waits for
    /// its turn is said to wait there.
    open_at_page: Mutex<Option<PageWait>>,
}

impl SessionApprovals {
    /// Whether nothing was approved for the rest of the session.
    pub(crate) fn is_empty(&self) -> bool {
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
            && self
                .matching
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_empty()
    }
}

/// Asks the person at the client about the calls of one execution (or one call of a tool listed
/// directly).
#[derive(Debug)]
pub(crate) struct AskTheClient {
    /// The client, as the request being served reaches it (by request, or as a question of its
    /// multi round-trip request).
    client: ClientPeer,
    /// The SHA-256 of the execution's code, when code asks for the calls (else the client called
    /// a tool listed directly, and there is no execution to approve a tool for).
    code_sha256: Option<String>,
    /// Tools approved for the rest of this execution, and where.
    execution: Arc<Mutex<HashMap<String, AnsweredVia>>>,
    session: Arc<SessionApprovals>,
    pages: Arc<ApprovalPages>,
    /// The request's log level: the page's address goes to the client as a log message only
    /// when warnings pass it (never without one).
    log_level: Option<LoggingLevel>,
    /// Told when a call waits at the approval page and the client cannot show it: the round of
    /// the execution answers early, saying where (`rounds.rs`).
    page_waits: Option<PageWaits>,
}

impl AskTheClient {
    /// An approver for one execution (whose code has `code_sha256`) or, without it, one direct
    /// call in `session`, whose log level is `log_level`.
    pub(crate) fn new(
        client: ClientPeer,
        code_sha256: Option<String>,
        session: Arc<SessionApprovals>,
        pages: Arc<ApprovalPages>,
        log_level: Option<LoggingLevel>,
    ) -> Self {
        Self {
            client,
            code_sha256,
            execution: Arc::default(),
            session,
            pages,
            log_level,
            page_waits: None,
        }
    }

    /// The same, telling `page_waits` when a call waits at the approval page and the client
    /// cannot show it.
    pub(crate) fn telling(mut self, page_waits: Option<PageWaits>) -> Self {
        self.page_waits = page_waits;
        self
    }
}

/// An earlier answer that covers this call, if one does.
fn covered(
    execution: &Mutex<HashMap<String, AnsweredVia>>,
    session: &SessionApprovals,
    request: &ApprovalRequest,
) -> Option<Approval> {
    // A poisoned lock only means a panic elsewhere; the map itself is whole.
    let held = |map: &Mutex<HashMap<String, AnsweredVia>>| {
        map.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&request.tool)
            .copied()
    };
    let before = |scope, matching, via| Approval::Approved {
        scope,
        matching,
        asked: false,
        via,
    };
    if let Some(via) = held(execution) {
        return Some(before(ApprovalScope::Execution, Vec::new(), via));
    }
    if let Some(via) = held(&session.tools) {
        return Some(before(ApprovalScope::Session, Vec::new(), via));
    }
    session
        .matching
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .find(|pattern| pattern.covers(&request.tool, &request.arguments))
        .map(|pattern| before(ApprovalScope::Matching, pattern.keys.clone(), pattern.via))
}

impl Approver for AskTheClient {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, Approval> {
        let client = self.client.clone();
        let code_sha256 = self.code_sha256.clone();
        let execution = self.execution.clone();
        let session = self.session.clone();
        let pages = self.pages.clone();
        let page_waits = self.page_waits.clone();
        let notify = self
            .log_level
            .is_some_and(|least| crate::severity(LoggingLevel::Warning) >= crate::severity(least));
        Box::pin(async move {
            if let Some(answer) = covered(&execution, &session, &request) {
                return answer;
            }
            let modes = client.elicitation_modes();
            let form = match pages.options().mode {
                ApprovalMode::Auto => modes.contains(&ElicitationMode::Form),
                ApprovalMode::Page => false,
                ApprovalMode::Elicitation => true,
            };
            if form && !modes.contains(&ElicitationMode::Form) {
                return Approval::Unavailable(
                    "this MCP client cannot be asked (it does not support form elicitation, and --approval elicitation keeps toolweave's approval page off)".to_owned(),
                );
            }
            let url_mode = modes.contains(&ElicitationMode::Url);
            // A client that cannot show the page leaves the model to be told.
            let tell = page_waits.filter(|_| !form && !url_mode);
            let _turn = match session.asking.try_lock() {
                Ok(turn) => turn,
                Err(_) => {
                    // Another call's question is open: this one waits behind it, and the model
                    // is told where that question is.
                    let _queued = tell
                        .as_ref()
                        .and_then(|tell| tell_queued(tell, &session, &request))
                        .map(tokio_util::sync::CancellationToken::drop_guard);
                    session.asking.lock().await
                }
            };
            // An answer given while this call waited for its turn may cover it.
            if let Some(answer) = covered(&execution, &session, &request) {
                return answer;
            }
            let from_code = code_sha256.is_some();
            let offered = scopes(&request, from_code);
            let answer = if form {
                ask_by_form(&client, &request, from_code, &offered).await
            } else {
                let call = PendingCall {
                    id: String::new(),
                    url: String::new(),
                    tool: request.tool.clone(),
                    reason: request.reason.clone(),
                    arguments: request.arguments.clone(),
                    code_sha256,
                    scopes: offered,
                    pid: 0,
                };
                let page = Page {
                    pages: &pages,
                    session: &session,
                    tell,
                };
                ask_at_page(&client, page, call, url_mode, notify).await
            };
            let answer = match answer {
                Ok(answer) => answer,
                Err(approval) => return approval,
            };
            if !answer.approve {
                return Approval::Declined(answer.via);
            }
            remember(&execution, &session, &request, &answer)
        })
    }
}

/// Keeps an approval whose scope is wider than its call; the approval this call gets.
fn remember(
    execution: &Mutex<HashMap<String, AnsweredVia>>,
    session: &SessionApprovals,
    request: &ApprovalRequest,
    answer: &PageAnswer,
) -> Approval {
    let (scope, keys) = parse_scope(&answer.scope).unwrap_or((ApprovalScope::Call, Vec::new()));
    let map = match scope {
        ApprovalScope::Execution => Some(execution),
        ApprovalScope::Session => Some(&session.tools),
        ApprovalScope::Call | ApprovalScope::Matching => None,
    };
    if let Some(map) = map {
        map.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(request.tool.clone(), answer.via);
    }
    if scope == ApprovalScope::Matching {
        let arguments = request.arguments.as_object().cloned().unwrap_or_default();
        let values = if keys.is_empty() {
            arguments
        } else {
            arguments
                .into_iter()
                .filter(|(key, _)| keys.contains(key))
                .collect()
        };
        session
            .matching
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Pattern {
                tool: request.tool.clone(),
                keys: keys.clone(),
                values,
                via: answer.via,
            });
    }
    Approval::Approved {
        scope,
        matching: keys,
        asked: true,
        via: answer.via,
    }
}

/// The scope a word of the question names: `call`, `execution`, `session`, `matching` (all the
/// arguments) or `matching:KEY`.
fn parse_scope(word: &str) -> Option<(ApprovalScope, Vec<String>)> {
    if let Some(key) = word.strip_prefix("matching:") {
        return Some((ApprovalScope::Matching, vec![key.to_owned()]));
    }
    ApprovalScope::parse(word).map(|scope| (scope, Vec::new()))
}

/// The scopes the question offers for `request`: each word and what it covers, the narrowest
/// first.
pub(crate) fn scopes(request: &ApprovalRequest, from_code: bool) -> Vec<(String, String)> {
    let tool = &request.tool;
    let mut scopes = vec![("call".to_owned(), "This call only".to_owned())];
    if from_code {
        scopes.push((
            "execution".to_owned(),
            format!("Every call of {tool} for the rest of this execution"),
        ));
    }
    if let Value::Object(arguments) = &request.arguments {
        let scalars = arguments
            .iter()
            .filter(|(key, value)| {
                key.len() <= 64 && (value.is_string() || value.is_number() || value.is_boolean())
            })
            .take(MAX_MATCHED_KEYS);
        for (key, value) in scalars {
            let mut shown = value.to_string();
            if toolweave_jsonrpc::text::truncate(&mut shown, MAX_SHOWN_VALUE) {
                shown.push('…');
            }
            scopes.push((
                format!("matching:{key}"),
                format!("Calls of {tool} whose {key} is {shown}, for the rest of this session"),
            ));
        }
        if !arguments.is_empty() {
            scopes.push((
                "matching".to_owned(),
                format!(
                    "Calls of {tool} with exactly these arguments, for the rest of this session"
                ),
            ));
        }
    }
    scopes.push((
        "session".to_owned(),
        format!("Every call of {tool} for the rest of this session"),
    ));
    scopes
}

/// Asks through the client's form. `Err` is the approval when nobody could be asked.
async fn ask_by_form(
    client: &ClientPeer,
    request: &ApprovalRequest,
    from_code: bool,
    offered: &[(String, String)],
) -> Result<PageAnswer, Approval> {
    let params = question(request, from_code, offered).map_err(|error| {
        Approval::Unavailable(format!("the question could not be built: {error}"))
    })?;
    let answer = client
        .elicit_own(params)
        .await
        .map_err(|error| Approval::Unavailable(format!("asking the client failed ({error})")))?;
    let content = answer.content.unwrap_or_default();
    let approve = answer.action == ElicitationAction::Accept
        && content.get("approve") == Some(&Value::Bool(true));
    // A scope the question did not offer (or none: a client that shows only the checkbox)
    // approves this call only.
    let scope = content
        .get("scope")
        .and_then(Value::as_str)
        .filter(|scope| offered.iter().any(|(word, _)| word == scope))
        .unwrap_or("call")
        .to_owned();
    Ok(PageAnswer {
        approve,
        scope,
        via: AnsweredVia::Elicitation,
    })
}

/// Asks at the approval page: registers the call, tells the person where it waits, and waits
/// for an answer there (or from `toolweave approve`), bounded by `--approval-timeout-ms`. The
/// client is told by a log message when `notify` (its log level lets warnings through), and by a
/// URL-mode elicitation when `url_mode`; `tell`, when given, is told the call waits (the model
/// is told by the execution's early answer).
async fn ask_at_page(
    client: &ClientPeer,
    page: Page<'_>,
    call: PendingCall,
    url_mode: bool,
    notify: bool,
) -> Result<PageAnswer, Approval> {
    let Page {
        pages,
        session,
        tell,
    } = page;
    let mut ticket = pages.register(call).await.map_err(Approval::Unavailable)?;
    let call = ticket.call.clone();
    // Over once this call is answered or no longer waits.
    let over = tokio_util::sync::CancellationToken::new();
    let _over = over.clone().drop_guard();
    let _open = OpenAtPage::new(session, &call, &over);
    if let Some(tell) = tell {
        tell_waiting(&tell, &call, &over);
    }
    let message = format!(
        "toolweave asks for approval: a call of {} ({}) waits at {} (or answer it with `toolweave approve {}`)",
        call.tool, call.reason, call.url, call.id
    );
    tracing::warn!(tool = %call.tool, id = %call.id, url = %call.url, "{message}");
    if notify {
        let mut params = LoggingMessageNotificationParam::new(
            LoggingLevel::Warning,
            json!({ "message": message, "url": call.url, "id": call.id, "tool": call.tool }),
        );
        params.logger = Some("toolweave/approval".to_owned());
        if let Err(error) = client.peer().notify_logging_message(params).await {
            tracing::debug!(%error, "the approval notification could not be sent");
        }
    }
    open_browser(pages, &call.url);
    let timeout = pages.options().timeout;
    let answer = &mut ticket.answer;
    let waited = async {
        if !url_mode {
            return answer.await.ok();
        }
        // The client shows the address itself; its person may decline there instead.
        let asked = client.elicit_own(ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: format!(
                "Approve or deny a call of {} at toolweave's approval page",
                call.tool
            ),
            url: call.url.clone(),
            elicitation_id: call.id.clone(),
        });
        tokio::select! {
            answer = &mut *answer => answer.ok(),
            shown = asked => match shown {
                Ok(result) if result.action != ElicitationAction::Accept => Some(PageAnswer {
                    approve: false,
                    scope: "call".to_owned(),
                    via: AnsweredVia::Elicitation,
                }),
                _ => answer.await.ok(),
            },
        }
    };
    match tokio::time::timeout(timeout, waited).await {
        Ok(Some(answer)) => Ok(answer),
        Ok(None) => Err(Approval::Unavailable(
            "the approval page stopped waiting".to_owned(),
        )),
        Err(_) => Err(Approval::Unanswered(format!(
            "no one answered at toolweave's approval page ({}) within {} ms (--approval-timeout-ms, or \"approvalTimeoutMs\" in the settings file)",
            call.url
                .rsplit_once("/approval/")
                .map_or(call.url.as_str(), |(base, _)| base),
            timeout.as_millis()
        ))),
    }
}

/// Where a call is asked at the approval page: the page, the session's approvals (which note
/// the question open there), and whom to tell that the call waits.
struct Page<'a> {
    pages: &'a ApprovalPages,
    session: &'a SessionApprovals,
    tell: Option<PageWaits>,
}

/// The session's note of the question open at the page, while it is open.
struct OpenAtPage<'a> {
    session: &'a SessionApprovals,
}

impl<'a> OpenAtPage<'a> {
    fn new(
        session: &'a SessionApprovals,
        call: &PendingCall,
        over: &tokio_util::sync::CancellationToken,
    ) -> Self {
        *session
            .open_at_page
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(page_wait(call, over));
        Self { session }
    }
}

impl Drop for OpenAtPage<'_> {
    fn drop(&mut self) {
        *self
            .session
            .open_at_page
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }
}

fn page_wait(call: &PendingCall, over: &tokio_util::sync::CancellationToken) -> PageWait {
    PageWait {
        tool: call.tool.clone(),
        reason: call.reason.clone(),
        url: call.url.clone(),
        id: call.id.clone(),
        over: over.clone(),
    }
}

/// Tells `tell` that `call` waits at the approval page until `over`.
fn tell_waiting(tell: &PageWaits, call: &PendingCall, over: &tokio_util::sync::CancellationToken) {
    tell.waiting(page_wait(call, over));
}

/// Tells `tell` that the call `request` waits for its turn behind the question open at the
/// approval page, if one is; the token that says it no longer waits.
fn tell_queued(
    tell: &PageWaits,
    session: &SessionApprovals,
    request: &ApprovalRequest,
) -> Option<tokio_util::sync::CancellationToken> {
    let open = session
        .open_at_page
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()?;
    let over = tokio_util::sync::CancellationToken::new();
    tell.waiting(PageWait {
        tool: request.tool.clone(),
        reason: format!(
            "{}; asked once the earlier call of {} is answered",
            request.reason, open.tool
        ),
        over: over.clone(),
        ..open
    });
    Some(over)
}

/// Runs `--approval-browser` with `url`, when set.
fn open_browser(pages: &ApprovalPages, url: &str) {
    let Some((program, arguments)) = pages
        .options()
        .browser_command
        .as_ref()
        .and_then(|command| command.split_first())
    else {
        return;
    };
    let started = tokio::process::Command::new(program)
        .args(arguments)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(false)
        .spawn();
    match started {
        Ok(mut child) => {
            tokio::spawn(async move {
                let _ = child.wait().await;
            });
        }
        Err(error) => {
            tracing::warn!(%program, %error, "--approval-browser did not start");
        }
    }
}

/// The elicitation for `request`: the tool, why it asks, its arguments, and the scopes offered.
fn question(
    request: &ApprovalRequest,
    from_code: bool,
    offered: &[(String, String)],
) -> Result<ElicitRequestParams, String> {
    let mut arguments = serde_json::to_string_pretty(&request.arguments)
        .unwrap_or_else(|_| request.arguments.to_string());
    if toolweave_jsonrpc::text::truncate(&mut arguments, MAX_SHOWN_ARGUMENTS) {
        arguments.push_str("\n…");
    }
    let tool = &request.tool;
    let scopes: Vec<Value> = offered
        .iter()
        .map(|(word, title)| json!({ "const": word, "title": title }))
        .collect();
    let schema = json!({
        "type": "object",
        "properties": {
            "approve": { "type": "boolean", "title": "Approve" },
            "scope": {
                "type": "string",
                "title": "Approve for",
                "oneOf": scopes,
                "default": "call",
            },
        },
        "required": ["approve"],
    });
    let Value::Object(schema) = schema else {
        return Err("the schema is not an object".to_owned());
    };
    let schema = ElicitationSchema::from_json_schema(schema).map_err(|error| error.to_string())?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!(
            "{} {tool} ({}), with these arguments:\n{arguments}\nAllow it?",
            if from_code {
                "Code run by toolweave wants to call"
            } else {
                "The model wants toolweave to call"
            },
            request.reason,
        ),
        requested_schema: schema,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_offers_the_scopes_that_apply() {
        let request = ApprovalRequest {
            tool: "fixture.remove".to_owned(),
            arguments: json!({ "name": "x" }),
            reason: "its server marks it destructive".to_owned(),
        };
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = question(&request, true, &scopes(&request, true)).unwrap()
        else {
            panic!("a form");
        };
        assert!(
            message.starts_with(
                "Code run by toolweave wants to call fixture.remove (its server marks it destructive), with these arguments:\n{\n  \"name\": \"x\"\n}"
            ),
            "{message}"
        );
        let schema = serde_json::to_value(&requested_schema).unwrap();
        let offered: Vec<&str> = schema["properties"]["scope"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|scope| scope["const"].as_str().unwrap())
            .collect();
        assert_eq!(
            offered,
            ["call", "execution", "matching:name", "matching", "session"]
        );
        assert_eq!(schema["required"], json!(["approve"]));

        let ElicitRequestParams::FormElicitationParams {
            requested_schema, ..
        } = question(&request, false, &scopes(&request, false)).unwrap()
        else {
            panic!("a form");
        };
        let schema = serde_json::to_value(&requested_schema).unwrap();
        assert_eq!(
            schema["properties"]["scope"]["oneOf"]
                .as_array()
                .unwrap()
                .len(),
            4,
            "no execution to approve a tool for: {schema}"
        );
    }
}
