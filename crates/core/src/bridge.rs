//! The bridge: every request guest code makes of the host passes through here.
//!
//! A tool call is resolved to one upstream tool, its arguments are validated against the tool's
//! `inputSchema`, the upstream is called, `structuredContent` is checked against `outputSchema`, and
//! the result is converted to the value the guest's promise resolves to. A request that gets no
//! value gets a [`CallError`], worded for the model where it is defined; the guest reads it as the
//! message of a rejected promise.

use std::sync::Arc;

use rmcp::model::{
    CallToolResult, ClientRequest, ContentBlock, GetPromptRequest, GetPromptRequestParams,
    ListPromptsRequest, ListResourceTemplatesRequest, ListResourcesRequest, PaginatedRequestParams,
    ReadResourceRequest, ReadResourceRequestParams,
};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use toolweave_catalog::Entry;
use toolweave_catalog::arguments::{DeclaredArguments, meant_argument};
use toolweave_sandbox::{HostRequest, ServerAsk};
use toolweave_upstream::{Capability, Listener};

use crate::approval::{
    self, AllowReason, AnsweredVia, Approval, ApprovalRequest, ApprovalScope, Approver, AskReason,
    Tier,
};
use crate::audit::CallRecord;
use crate::budget::Budget;
use crate::catalog_state::{CatalogState, Direction, entry_name, namespace_part};
use crate::error::{CallError, ExecutionError, MAX_ERROR_TEXT, NamedServer, arguments_given, cut};
use crate::gateway::Gateway;
use crate::identity::Identity;
use crate::json_size::{content_json_len, value_json_len};
use crate::observe::CallOutcome;
use crate::provider::{CallContext, ToolProvider};
use crate::redaction::{Redacted, Tokens};
use crate::session_state::SessionState;
use crate::text_result::{self, KeptAsText};
use toolweave_catalog::Flavor;
use toolweave_config::{Policy, ToolGlobs, ToolName};

/// What one execution's calls answer to besides the gateway: where upstream notices go, its
/// budget, and who approves destructive calls.
pub(crate) struct Scope<'a> {
    pub(crate) listener: Option<&'a Listener>,
    pub(crate) budget: &'a Budget,
    pub(crate) approver: Option<&'a Arc<dyn Approver>>,
    /// What the MCP session keeps across executions: the store and result handles.
    /// `None` for a call of a tool listed directly, which has no code to ask.
    pub(crate) state: Option<&'a SessionState>,
    /// The tokens redaction gave the values the model read: tokens in a tool's arguments are
    /// turned back into these values.
    pub(crate) tokens: Option<&'a Tokens>,
    /// The tools this execution asked to be kept to (`allowedTools`), within the policy.
    pub(crate) allowed: Option<&'a ToolGlobs>,
    /// Who the execution runs for, when the client said: its rules decide instead of the
    /// gateway's alone.
    pub(crate) identity: Option<&'a Identity>,
    /// The execution's use of the LLM (`llm.ask`, `llm.think`); `None` for a call of a tool
    /// listed directly.
    pub(crate) llm: Option<&'a crate::llm::LlmBudget>,
    /// The execution's calls waiting for a person's answer; `None` for a call of a tool listed
    /// directly.
    pub(crate) waiting: Option<&'a crate::approval::Waiting>,
    /// What the model should know about this call that its value does not say (arguments the
    /// tool does not declare, numbers kept as text), for the execution's answer.
    pub(crate) warnings: std::sync::Mutex<Vec<String>>,
}

/// What became of one request of guest code, as the guest, the audit log, metrics and traces
/// all read it.
pub(crate) struct Answered {
    /// The value the guest's promise resolves to, or why there is none.
    pub(crate) answer: Result<Value, CallError>,
    /// How it ended: answered, refused (by the policy, or approval withheld), or failed.
    pub(crate) outcome: CallOutcome,
    /// What approval decided, for a tool call that needed it.
    pub(crate) decision: Decision,
}

impl Answered {
    fn new(answer: Result<Value, CallError>, decision: Decision) -> Self {
        let outcome = match &answer {
            Ok(_) => CallOutcome::Ok,
            Err(error) if error.is_refusal() => CallOutcome::Denied,
            Err(_) => CallOutcome::Error,
        };
        Self {
            answer,
            outcome,
            decision,
        }
    }

    /// A request refused or failed before any approval was asked for.
    fn failed(error: CallError) -> Self {
        Self::new(Err(error), Decision::default())
    }
}

/// What became of a call that needed approval, as the audit log records it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Decision {
    /// `pre-approved`, `approved`, `approved-before`, `declined`, `unanswered` or `unavailable`.
    approval: &'static str,
    /// What an approval covers.
    scope: Option<ApprovalScope>,
    /// The argument keys a matching approval covers.
    matching: Vec<String>,
    /// Where the person answered.
    via: Option<AnsweredVia>,
}

impl Scope<'_> {
    /// The rules this scope's calls are decided by: its identity's (within the gateway's), or
    /// the gateway's.
    fn policy<'p>(&'p self, gateway: &'p Gateway) -> &'p Policy {
        self.identity
            .map_or(gateway.catalogs.policy(), Identity::policy)
    }

    /// Adds a warning for the execution's answer.
    fn warn(&self, warning: String) {
        self.warnings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(warning);
    }

    /// The warnings this scope's calls added, taken out of it.
    pub(crate) fn take_warnings(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .warnings
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

/// The most pages of a list (`resources.<server>.list()`) one call follows.
const MAX_LIST_PAGES: usize = 100;

/// A result this large (as the server sent it) is measured off the protocol thread.
const LARGE_RESULT_BYTES: usize = 1024 * 1024;

/// The most of a tool's name, as the code wrote it, a trace shows.
const MAX_SPAN_TOOL_NAME: usize = 256;

/// Answers one request of guest code, and describes it for the audit log when the gateway keeps
/// one (tool calls only). `Ok` is the value the guest's promise resolves to. Tokens of
/// redaction in a tool's arguments are turned back into their values first.
pub(crate) async fn answer_recorded(
    gateway: &Arc<Gateway>,
    request: HostRequest,
    flavor: Flavor,
    cancel: CancellationToken,
    scope: &Scope<'_>,
) -> (Result<Value, CallError>, Option<CallRecord>) {
    // What the audit log records is what code sent, tokens and all.
    let recorded = match (&request, gateway.audit.as_ref()) {
        (HostRequest::Tool { name, args, .. }, Some(audit)) => {
            Some((audit, name.clone(), args.clone()))
        }
        (HostRequest::Server { server, ask }, Some(audit)) => Some((
            audit,
            format!("{server}.{}", ask.method()),
            serde_json::to_value(ask).unwrap_or(Value::Null),
        )),
        _ => None,
    };
    let mut request = request;
    let restored = match (&mut request, &gateway.redaction, scope.tokens) {
        (HostRequest::Tool { args, .. }, Some(_), Some(tokens)) => {
            crate::redaction::restore(tokens, args)
        }
        _ => Redacted::default(),
    };
    let Some((audit, name, args)) = recorded else {
        return (
            answer(gateway, request, flavor, cancel, scope).await.answer,
            None,
        );
    };
    let argument_bytes = value_json_len(&args);
    let redaction = gateway.redaction.as_ref();
    let arguments = audit
        .contents()
        .then(|| crate::audit::without_redacted(redaction, args));
    let started = std::time::Instant::now();
    let Answered {
        answer,
        outcome,
        decision,
    } = answer(gateway, request, flavor, cancel, scope).await;
    let duration_ms = crate::audit::millis(started.elapsed().as_secs_f64() * 1000.0);
    let (result_bytes, result) = match &answer {
        Ok(value) => (
            value_json_len(value),
            audit
                .contents()
                .then(|| crate::audit::without_redacted(redaction, value.clone())),
        ),
        Err(_) => (0, None),
    };
    let tool = gateway.catalogs.snapshot().tool_called(&name);
    let record = CallRecord {
        name,
        tool,
        duration_ms,
        outcome: outcome.as_str(),
        approval: Some(decision.approval).filter(|approval| !approval.is_empty()),
        approval_scope: decision.scope.map(ApprovalScope::as_str),
        approval_matching: (decision.scope == Some(ApprovalScope::Matching))
            .then_some(decision.matching),
        approval_via: decision.via.map(AnsweredVia::as_str),
        argument_bytes,
        result_bytes,
        restored,
        arguments,
        result,
    };
    (answer, Some(record))
}

/// Answers one request of guest code: the value the guest's promise resolves to, or why not.
pub(crate) async fn answer(
    gateway: &Arc<Gateway>,
    request: HostRequest,
    flavor: Flavor,
    cancel: CancellationToken,
    scope: &Scope<'_>,
) -> Answered {
    // A tool's result is measured where it arrives; other answers here, with what to ask instead.
    let smaller = match &request {
        HostRequest::Tool { .. } => None,
        HostRequest::Search { .. } | HostRequest::Describe { .. } => Some("ask for fewer tools"),
        HostRequest::Server { .. } => Some("read fewer or smaller resources at a time"),
        HostRequest::Session(_) => {
            Some("read a smaller piece at a time with results.get(handle, {path, offset, limit})")
        }
        HostRequest::Emit { .. } => None,
        HostRequest::Llm(_) => Some("ask for a shorter answer (a smaller maxTokens)"),
    };
    let answer = match request {
        // A tool's result is measured where it arrives (`smaller` is `None`).
        HostRequest::Tool { name, args, raw } => {
            return traced_call(gateway, &name, args, raw, flavor, cancel, scope).await;
        }
        HostRequest::Search { query, limit } => {
            gateway
                .discovery
                .search_for_code(query, limit, flavor)
                .await
        }
        HostRequest::Describe { names } => gateway.discovery.describe_for_code(names, flavor).await,
        HostRequest::Server { server, ask } => {
            ask_server(gateway, &server, ask, cancel, scope).await
        }
        HostRequest::Session(ask) => match scope.state {
            Some(state) => state.answer_async(ask).await.map_err(CallError::Session),
            None => Err(internal("no session state for this call")),
        },
        // The execution counts the blocks of its answer itself (`execution.rs`).
        HostRequest::Emit { .. } => Err(internal(
            "emit(block) reached the bridge instead of its execution",
        )),
        HostRequest::Llm(ask) => match scope.llm {
            Some(llm) => {
                let contents = gateway.audit.as_ref().is_some_and(|audit| audit.contents());
                llm.answer(ask, cancel, contents)
                    .await
                    .map_err(CallError::Llm)
            }
            None => Err(internal("no LLM budget for this call")),
        },
    };
    Answered::new(
        within_memory(answer, smaller, gateway.limits.memory_bytes),
        Decision::default(),
    )
}

/// A tool call in a span of its own, told to the gateway's observer once it ends.
async fn traced_call(
    gateway: &Arc<Gateway>,
    name: &str,
    args: Value,
    raw: bool,
    flavor: Flavor,
    cancel: CancellationToken,
    scope: &Scope<'_>,
) -> Answered {
    let span = tracing::trace_span!(
        target: crate::SPAN_TARGET,
        "tool call",
        otel.kind = "internal",
        otel.status_code = tracing::field::Empty,
        tool = tracing::field::Empty,
        server = tracing::field::Empty,
    );
    if !span.is_disabled() {
        // The name is the code's: cut, whatever the code made it.
        span.record("tool", cut(name.to_owned(), MAX_SPAN_TOOL_NAME));
    }
    let started = std::time::Instant::now();
    let answered = tracing::Instrument::instrument(
        call_tool(gateway, name, args, raw, flavor, cancel, scope),
        span.clone(),
    )
    .await;
    observe_call(gateway, name, answered.outcome, started.elapsed(), &span);
    answered
}

/// `resources.<server>.*` and `prompts.<server>.*`: the server named by its name in code or as
/// configured, the policy asked about `server.<method>` (`github.resources/read`), the call
/// counted against the execution's budgets, and lists followed page by page.
async fn ask_server(
    gateway: &Arc<Gateway>,
    named: &str,
    ask: ServerAsk,
    cancel: CancellationToken,
    scope: &Scope<'_>,
) -> Result<Value, CallError> {
    let method = ask.method();
    let state = gateway.catalogs.current_catalog().await;
    let server = server_named(&state, named, method)?;
    let name = format!("{server}.{method}");
    let guest_server = state.names.server(&server);
    drop(state);
    server_method_allowed(gateway, scope, &name, [&server, &guest_server], method)?;
    scope.budget.take_call(&name).map_err(CallError::Limit)?;
    let Some(provider) = gateway.catalogs.provider(&server) else {
        return Err(internal(format!("no provider for \"{server}\"")));
    };
    let options = || CallContext {
        cancel: cancel.clone(),
        listener: scope.listener.cloned(),
        taken: tokio::time::Instant::now(),
        namespace: server.clone(),
        tool: method.to_owned(),
    };
    // One request, or a list read page by page: the key of its items, and its request for a
    // page.
    let (capability, list_key, page): (_, _, fn(PaginatedRequestParams) -> ClientRequest) =
        match ask {
            ServerAsk::ReadResource { uri } => {
                let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
                    ReadResourceRequestParams::new(uri),
                ));
                let mut value = request_value(
                    provider.as_ref(),
                    &name,
                    request,
                    Capability::Resources,
                    scope,
                    &options,
                )
                .await?;
                // A resource's contents, as the server sent them.
                return Ok(value
                    .as_object_mut()
                    .and_then(|result| result.remove("contents"))
                    .unwrap_or(Value::Array(Vec::new())));
            }
            ServerAsk::GetPrompt {
                name: prompt,
                arguments,
            } => {
                let mut params = GetPromptRequestParams::new(prompt);
                params.arguments = (!arguments.is_empty()).then_some(arguments);
                let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
                // The prompt's description and messages, as the server sent them.
                return request_value(
                    provider.as_ref(),
                    &name,
                    request,
                    Capability::Prompts,
                    scope,
                    &options,
                )
                .await;
            }
            ServerAsk::ListResources => (Capability::Resources, "resources", |params| {
                ClientRequest::ListResourcesRequest(ListResourcesRequest::with_param(params))
            }),
            ServerAsk::ListResourceTemplates => {
                (Capability::Resources, "resourceTemplates", |params| {
                    ClientRequest::ListResourceTemplatesRequest(
                        ListResourceTemplatesRequest::with_param(params),
                    )
                })
            }
            ServerAsk::ListPrompts => (Capability::Prompts, "prompts", |params| {
                ClientRequest::ListPromptsRequest(ListPromptsRequest::with_param(params))
            }),
        };
    let list = List {
        name: &name,
        capability,
        key: list_key,
        page,
    };
    list_pages(provider.as_ref(), &list, scope, &options).await
}

/// Refuses the `method` of the server `[configured, guest]` (named `name`, `server.method`) when
/// the policy or the execution's `allowedTools` keep it out.
fn server_method_allowed(
    gateway: &Gateway,
    scope: &Scope<'_>,
    name: &str,
    [server, guest_server]: [&str; 2],
    method: &str,
) -> Result<(), CallError> {
    let method = &ToolName {
        server,
        tool: method,
        guest_server,
        guest_tool: method,
    };
    if let Err(denial) = scope.policy(gateway).decide(method) {
        return Err(CallError::MethodDenied {
            name: name.to_owned(),
            identity: scope.identity.map(|identity| identity.name().to_owned()),
            denial,
        });
    }
    outside_allowed(scope, name, method)
}

/// The configured name of the server `named` in code or as configured, whose `method`
/// (`resources/read`, `prompts/get`, ...) code asked for; the error names the servers there are.
fn server_named(state: &CatalogState, named: &str, method: &str) -> Result<String, CallError> {
    if let Some((_, original)) = state
        .catalog
        .namespaces()
        .find(|(guest, original)| *guest == named || *original == named)
    {
        return Ok(original.to_owned());
    }
    let servers = state
        .catalog
        .namespaces()
        .map(|(guest, _)| guest.to_owned())
        .collect();
    let kind = if method.starts_with("prompts") {
        "prompts"
    } else {
        "resources"
    };
    Err(CallError::NoServer {
        named: cut(named.to_owned(), MAX_SPAN_TOOL_NAME),
        kind,
        servers,
    })
}

/// A list a server answers page by page: its request for a page, and the key of its items.
struct List<'a> {
    /// `server.method`, as errors name it.
    name: &'a str,
    capability: Capability,
    key: &'static str,
    page: fn(PaginatedRequestParams) -> ClientRequest,
}

/// Every item of `list`, read page by page up to [`MAX_LIST_PAGES`].
async fn list_pages(
    provider: &dyn ToolProvider,
    list: &List<'_>,
    scope: &Scope<'_>,
    options: &impl Fn() -> CallContext,
) -> Result<Value, CallError> {
    let bad_list = |problem: String| CallError::BadList {
        name: list.name.to_owned(),
        problem,
    };
    let List {
        name,
        capability,
        key: list_key,
        page,
    } = *list;
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let request = page(PaginatedRequestParams::default().with_cursor(cursor.clone()));
        let value = request_value(provider, name, request, capability, scope, options).await?;
        let Value::Object(mut page) = value else {
            return Err(bad_list("the server's answer is not an object".to_owned()));
        };
        match page.remove(list_key) {
            Some(Value::Array(more)) => items.extend(more),
            // `{}`: an empty list.
            None => {}
            Some(_) => {
                return Err(bad_list(format!(
                    "the server's answer has \"{list_key}\" that is not a list"
                )));
            }
        }
        let next = page
            .remove("nextCursor")
            .and_then(|next| next.as_str().map(str::to_owned));
        // A server that hands back the cursor it was given would list the same page forever.
        if next.is_none() || next == cursor {
            return Ok(Value::Array(items));
        }
        cursor = next;
    }
    Err(bad_list(format!(
        "the server's list did not end within {MAX_LIST_PAGES} pages"
    )))
}

/// Sends one request of [`ask_server`] and takes what came back from the bytes budget: the
/// answer as JSON.
async fn request_value(
    provider: &dyn ToolProvider,
    name: &str,
    request: ClientRequest,
    capability: Capability,
    scope: &Scope<'_>,
    context: &impl Fn() -> CallContext,
) -> Result<Value, CallError> {
    let result = provider
        .request(request, capability, context())
        .await
        .map_err(|error| CallError::Failed {
            name: name.to_owned(),
            error: Box::new(error),
        })?;
    let value = serde_json::to_value(&result).map_err(|error| internal(error.to_string()))?;
    scope
        .budget
        .take_bytes(value_json_len(&value) as u64)
        .map_err(CallError::Limit)?;
    Ok(value)
}

/// Tells the gateway's observer (and the call's span) how a tool call ended.
fn observe_call(
    gateway: &Gateway,
    name: &str,
    outcome: CallOutcome,
    duration: std::time::Duration,
    span: &tracing::Span,
) {
    let observer = gateway.observer.get();
    if observer.is_none() && span.is_disabled() {
        return;
    }
    let server = gateway
        .catalogs
        .snapshot()
        .server_of_call(name)
        .map(str::to_owned);
    if let Some(server) = &server {
        span.record("server", server.as_str());
    }
    if outcome != CallOutcome::Ok {
        span.record("otel.status_code", "ERROR");
    }
    if let Some(observer) = observer {
        observer.tool_call(server.as_deref(), outcome, duration);
    }
}

/// `answer` as the guest can take it (its engine holds the JSON text whole, in the guest's
/// memory): an answer larger than `limit` refused, saying `smaller` (what to ask for instead). A
/// tool's result (`smaller` is `None`) is checked where it arrives, and ends the execution; an
/// error's text is cut to fit where it is handed to the guest ([`CallError::guest_text`]).
fn within_memory(
    answer: Result<Value, CallError>,
    smaller: Option<&'static str>,
    limit: usize,
) -> Result<Value, CallError> {
    match (answer, smaller) {
        (Ok(value), Some(smaller)) => {
            let size = value_json_len(&value);
            if size <= limit {
                return Ok(value);
            }
            Err(CallError::AnswerTooLarge {
                size,
                limit,
                smaller,
            })
        }
        (answer, _) => answer,
    }
}

/// An internal error: what went wrong inside toolweave.
fn internal(message: impl Into<String>) -> CallError {
    CallError::Internal {
        message: message.into(),
    }
}

/// Calls the tool code named `name`: resolved, admitted by the rules, its arguments checked,
/// approved when its tier asks, counted against the budgets, sent, and its result checked. What
/// approval decided comes back with the answer.
async fn call_tool(
    gateway: &Arc<Gateway>,
    name: &str,
    args: Value,
    raw: bool,
    flavor: Flavor,
    cancel: CancellationToken,
    scope: &Scope<'_>,
) -> Answered {
    let state = gateway.catalogs.current_catalog().await;
    let (state, index) = match resolve(&state, name) {
        Some(index) => (state, index),
        None => match resolve_after_waiting(gateway, name, flavor).await {
            Ok(found) => found,
            Err(error) => return Answered::failed(error),
        },
    };
    // From here (its server known to be up) the call is toolweave's to send: one that times out
    // says how much of its time went before it was sent (a busy gateway) and how much to the
    // server.
    let mut taken = tokio::time::Instant::now();
    let Some(entry) = state.catalog.entries().get(index) else {
        return Answered::failed(internal(format!("tool index {index} out of range")));
    };
    let call = Call {
        state: &state,
        index,
        entry,
        display: entry.guest_name(),
    };
    let arguments = match admitted_arguments(&call, args, flavor, scope) {
        Ok(arguments) => arguments,
        Err(error) => return Answered::failed(error),
    };
    let (decision, approved) = approve(gateway, &call, &arguments, &cancel, scope).await;
    let answer = match approved {
        Ok(asked) => {
            if asked {
                // The person's time is neither toolweave's nor the server's.
                taken = tokio::time::Instant::now();
            }
            send(gateway, call, arguments, raw, taken, cancel, scope).await
        }
        Err(error) => Err(error),
    };
    Answered::new(answer, decision)
}

/// One call of a tool of the catalog: the snapshot it was resolved in, its index and entry
/// there, and its name as code calls it.
struct Call<'a> {
    state: &'a CatalogState,
    index: usize,
    entry: &'a Entry,
    display: String,
}

/// The arguments of `call`, once the identity's rules and the execution's `allowedTools` admit
/// the tool, checked against its input schema.
fn admitted_arguments(
    call: &Call<'_>,
    args: Value,
    flavor: Flavor,
    scope: &Scope<'_>,
) -> Result<Map<String, Value>, CallError> {
    let Call {
        state,
        index,
        entry,
        ref display,
    } = *call;
    outside_identity(scope, display, &entry_name(entry))?;
    outside_allowed(scope, display, &entry_name(entry))?;
    checked_arguments(state, index, entry, display, args, flavor, scope)
}

/// Whether `call` may go ahead by its tier, asking the person at the client when the tier asks:
/// what approval decided, and `Ok(true)` when a person was asked.
async fn approve(
    gateway: &Gateway,
    call: &Call<'_>,
    arguments: &Map<String, Value>,
    cancel: &CancellationToken,
    scope: &Scope<'_>,
) -> (Decision, Result<bool, CallError>) {
    match approval::tier(scope.policy(gateway), call.entry) {
        Tier::Allow(AllowReason::PreApproved { .. }) => (
            Decision {
                approval: "pre-approved",
                ..Decision::default()
            },
            Ok(false),
        ),
        Tier::Allow(_) => (Decision::default(), Ok(false)),
        Tier::Ask(reason) => {
            let (decision, answer) =
                ask_approval(call.entry, &call.display, arguments, &reason, cancel, scope).await;
            (decision, answer.map(|()| true))
        }
    }
}

/// Sends `call` with `arguments` once the budget allows it, and checks what came back: the value
/// the guest gets.
async fn send(
    gateway: &Gateway,
    call: Call<'_>,
    arguments: Map<String, Value>,
    raw: bool,
    taken: tokio::time::Instant,
    cancel: CancellationToken,
    scope: &Scope<'_>,
) -> Result<Value, CallError> {
    let Call {
        state,
        index,
        entry,
        display,
    } = call;
    scope
        .budget
        .take_call(&format!("{}.{}", entry.server, entry.tool))
        .map_err(CallError::Limit)?;

    let Some(provider) = gateway.catalogs.provider(&entry.server) else {
        return Err(internal(format!("no provider for {display}")));
    };
    let context = CallContext {
        cancel,
        listener: scope.listener.cloned(),
        taken,
        namespace: entry.server.clone(),
        tool: entry.tool.clone(),
    };
    let result = provider
        .call(&entry.tool, arguments, context)
        .await
        .map_err(|error| CallError::Failed {
            name: display.clone(),
            error: Box::new(error),
        })?;

    // What the server sent, as JSON: the content and structured content it answered with.
    let received = content_json_len(&result.content)
        + result.structured_content.as_ref().map_or(0, value_json_len);
    scope
        .budget
        .take_bytes(received as u64)
        .map_err(CallError::Limit)?;
    let value = if raw {
        serde_json::to_value(&result).map_err(|error| internal(error.to_string()))?
    } else {
        checked_result(state, index, &display, result, scope)?
    };
    within_result_memory(gateway, display, value, received, scope).await
}

/// The arguments of a call of `entry` (shown as `display`) as the object the server gets,
/// checked against its input schema; a model's mistake is named with the tool's signature. A
/// required argument left out whose schema has a default gets it, as the server would; an
/// argument the schema does not declare is refused when it is a near miss of a declared one
/// that was not given, and otherwise sent with a warning in the execution's answer.
fn checked_arguments(
    state: &CatalogState,
    index: usize,
    entry: &Entry,
    display: &str,
    args: Value,
    flavor: Flavor,
    scope: &Scope<'_>,
) -> Result<Map<String, Value>, CallError> {
    let mut arguments = match args {
        Value::Null => Map::new(),
        Value::Object(map) => map,
        other => {
            return Err(CallError::ArgumentsNotObject {
                tool: display.to_owned(),
                got: arguments_given(&other, flavor == Flavor::Python),
                signature: flavor.signature(&state.catalog, entry),
            });
        }
    };
    let declared = DeclaredArguments::of(&entry.input_schema.value());
    for (name, default) in &declared.defaults {
        if !arguments.contains_key(name) {
            arguments.insert(name.clone(), default.clone());
        }
    }
    let undeclared: Vec<&String> = arguments
        .keys()
        .filter(|name| !declared.declares(name))
        .collect();
    for given in &undeclared {
        if let Some(meant) = meant_argument(given, &declared.names)
            && !arguments.contains_key(meant)
        {
            return Err(CallError::ArgumentMisnamed {
                tool: display.to_owned(),
                given: cut((*given).clone(), MAX_ARGUMENT_NAME),
                meant: meant.to_owned(),
                signature: flavor.signature(&state.catalog, entry),
            });
        }
    }
    let undeclared_warning =
        (!undeclared.is_empty()).then(|| undeclared_arguments(display, &undeclared, &declared));
    let arguments_value = Value::Object(arguments);
    let violations = check(state, index, Direction::Input, &arguments_value);
    if !violations.is_empty() {
        return Err(CallError::ArgumentsMismatch {
            tool: display.to_owned(),
            violations,
            signature: flavor.signature(&state.catalog, entry),
        });
    }
    let Value::Object(arguments) = arguments_value else {
        return Err(internal("arguments stopped being an object"));
    };
    if let Some(warning) = undeclared_warning {
        scope.warn(warning);
    }
    Ok(arguments)
}

/// The most of one argument's name, as the code wrote it, an answer shows.
const MAX_ARGUMENT_NAME: usize = 64;

/// How many undeclared arguments, and declared ones, a warning names.
const MAX_NAMED_ARGUMENTS: usize = 10;

/// The warning for arguments of `tool` its schema does not declare: the first few of them, and
/// what the tool takes.
fn undeclared_arguments(
    tool: &str,
    undeclared: &[&String],
    declared: &DeclaredArguments,
) -> String {
    let quoted = |names: &mut dyn Iterator<Item = &String>, count: usize| {
        let mut text = names
            .take(MAX_NAMED_ARGUMENTS)
            .map(|name| format!("\"{}\"", cut(name.clone(), MAX_ARGUMENT_NAME)))
            .collect::<Vec<_>>()
            .join(", ");
        if count > MAX_NAMED_ARGUMENTS {
            text.push_str(&format!(" and {} more", count - MAX_NAMED_ARGUMENTS));
        }
        text
    };
    let given = quoted(&mut undeclared.iter().copied(), undeclared.len());
    let (is_not, them) = match undeclared.len() {
        1 => ("is not an argument", "it"),
        _ => ("are not arguments", "them"),
    };
    let takes = if declared.names.is_empty() {
        "declares no arguments".to_owned()
    } else {
        format!(
            "takes {}",
            quoted(&mut declared.names.iter(), declared.names.len())
        )
    };
    format!(
        "{given} {is_not} of {tool} (its schema does not declare {them}): sent as given, and \
         the server may ignore {them}. {tool} {takes}.",
    )
}

/// What the guest gets of a tool's result: its error as an error, its structured content
/// checked against its output schema, and the rest converted.
fn checked_result(
    state: &CatalogState,
    index: usize,
    display: &str,
    result: CallToolResult,
    scope: &Scope<'_>,
) -> Result<Value, CallError> {
    if result.is_error == Some(true) {
        return Err(CallError::ToolError {
            tool: display.to_owned(),
            message: error_text(&result),
        });
    }
    if let Some(structured) = result.structured_content.as_ref() {
        let violations = check(state, index, Direction::Output, structured);
        if !violations.is_empty() {
            return Err(CallError::ResultMismatch {
                tool: display.to_owned(),
                violations,
            });
        }
    }
    let (value, kept_as_text) = convert(result);
    if !kept_as_text.is_empty() {
        scope.warn(text_result::kept_as_text_warning(display, &kept_as_text));
    }
    Ok(value)
}

/// `value`, unless its JSON (`received` bytes as the server sent it) is larger than the guest's
/// memory could parse.
async fn within_result_memory(
    gateway: &Gateway,
    display: String,
    mut value: Value,
    received: usize,
    scope: &Scope<'_>,
) -> Result<Value, CallError> {
    // The guest's engine holds a value's JSON text whole, in the guest's memory, while it parses
    // it: a larger one could never reach the code. Refused here, before it is copied there.
    let size = if received > LARGE_RESULT_BYTES {
        // Counting tens of megabytes would hold up every other execution on this thread.
        let (size, counted) = tokio::task::spawn_blocking(move || (value_json_len(&value), value))
            .await
            .map_err(|error| internal(format!("the result of {display} was lost: {error}")))?;
        value = counted;
        size
    } else {
        value_json_len(&value)
    };
    let limit = gateway.limits.memory_bytes;
    if size > limit {
        return Err(CallError::Limit(scope.budget.refuse(
            ExecutionError::ToolResultTooLarge {
                tool: display,
                size,
                limit,
            },
        )));
    }
    Ok(value)
}

/// Refuses a call of the tool `name` (shown as `display`) that the rules of the identity the
/// execution runs for keep out; the gateway's rules have admitted it already (it is in the
/// catalog).
fn outside_identity(
    scope: &Scope<'_>,
    display: &str,
    name: &ToolName<'_>,
) -> Result<(), CallError> {
    let Some(identity) = scope.identity else {
        return Ok(());
    };
    let Err(denial) = identity.policy().decide(name) else {
        return Ok(());
    };
    Err(CallError::IdentityDenied {
        tool: display.to_owned(),
        identity: identity.name().to_owned(),
        denial,
    })
}

/// Refuses a call of the tool `name` (shown as `display`) that this execution's
/// `allowedTools` leaves out; the policy has admitted it already, and `allowedTools` can only
/// narrow that.
fn outside_allowed(scope: &Scope<'_>, display: &str, name: &ToolName<'_>) -> Result<(), CallError> {
    let Some(allowed) = scope.allowed else {
        return Ok(());
    };
    if allowed.matches(name) {
        return Ok(());
    }
    Err(CallError::NotInAllowedTools {
        tool: display.to_owned(),
        configured: name.upstream_name(),
        patterns: allowed.patterns().map(str::to_owned).collect(),
    })
}

/// Asks the person at the client whether this call of a tool in the ask tier may go ahead: what
/// became of asking, and `Err` for the refusal guest code reads, saying what the person running
/// toolweave can change.
async fn ask_approval(
    entry: &Entry,
    display: &str,
    arguments: &Map<String, Value>,
    reason: &AskReason,
    cancel: &CancellationToken,
    scope: &Scope<'_>,
) -> (Decision, Result<(), CallError>) {
    let tool = format!("{}.{}", entry.server, entry.tool);
    let request = ApprovalRequest {
        tool: tool.clone(),
        arguments: Value::Object(arguments.clone()),
        reason: reason.to_string(),
    };
    let answer = match scope.approver {
        Some(approver) => {
            let _waiting = scope.waiting.map(|waiting| waiting.wait(display));
            tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    let interrupted = CallError::ApprovalInterrupted { tool: display.to_owned() };
                    return (Decision::default(), Err(interrupted));
                }
                answer = approver.approve(request) => answer,
            }
        }
        None => Approval::Unavailable("nobody can be asked here".to_owned()),
    };
    match answer {
        Approval::Approved {
            scope: covers,
            matching,
            asked,
            via,
        } => {
            let decision = Decision {
                approval: if asked { "approved" } else { "approved-before" },
                scope: Some(covers),
                matching,
                via: Some(via),
            };
            (decision, Ok(()))
        }
        Approval::Declined(via) => {
            let decision = Decision {
                approval: "declined",
                via: Some(via),
                ..Decision::default()
            };
            let refusal = CallError::Declined {
                tool: display.to_owned(),
                reason: reason.clone(),
            };
            (decision, Err(refusal))
        }
        Approval::Unanswered(why) => {
            let decision = Decision {
                approval: "unanswered",
                ..Decision::default()
            };
            let refusal = CallError::Unanswered {
                tool: display.to_owned(),
                reason: reason.clone(),
                why,
            };
            (decision, Err(refusal))
        }
        Approval::Unavailable(why) => {
            let decision = Decision {
                approval: "unavailable",
                ..Decision::default()
            };
            let refusal = CallError::ApprovalUnavailable {
                tool: display.to_owned(),
                configured: tool,
                reason: reason.clone(),
                why,
            };
            (decision, Err(refusal))
        }
    }
}

/// Every way `value` breaks the tool's schema for `direction`, each as `path: message`. A schema
/// the upstream sent that does not compile checks nothing: the upstream still validates its input.
pub(crate) fn check(
    state: &CatalogState,
    index: usize,
    direction: Direction,
    value: &Value,
) -> Vec<String> {
    let Some(validator) = state.validator(index, direction) else {
        return Vec::new();
    };
    let Ok(validator) = validator.as_ref() else {
        return Vec::new();
    };
    validator
        .iter_errors(value)
        .map(|error| describe_violation(&error.instance_path().to_string(), &error.to_string()))
        .collect()
}

/// Resolves a name against a snapshot: `server.tool` (guest names) or `mcp__server__tool`.
fn resolve(state: &CatalogState, name: &str) -> Option<usize> {
    let entry = state.catalog.resolve(name)?;
    state.index_of(entry)
}

/// The name is not in the current snapshot: its server may still be starting. Wait for that
/// server (bounded by the startup timeout) and try again; a name whose server part names no
/// server waits for every server, so its suggestions come from the whole catalog. Otherwise
/// explain.
async fn resolve_after_waiting(
    gateway: &Arc<Gateway>,
    name: &str,
    flavor: Flavor,
) -> Result<(Arc<CatalogState>, usize), CallError> {
    let snapshot = gateway.catalogs.snapshot();
    let server = snapshot.server_of_call(name).map(str::to_owned);
    let state = match &server {
        Some(server) => {
            if let Some(provider) = gateway.catalogs.provider(server)
                && let Err(error) = provider.tools().await
            {
                return Err(CallError::ServerDown {
                    name: name.to_owned(),
                    error: Box::new(error),
                });
            }
            gateway.catalogs.current_catalog().await
        }
        None => gateway.catalogs.settled_catalog().await,
    };
    if let Some(index) = resolve(&state, name) {
        return Ok((state, index));
    }
    if let Some(denied) = state.denied_tool(name) {
        return Err(CallError::Denied {
            server: denied.server.clone(),
            tool: denied.tool.clone(),
            denial: denied.denial.clone(),
        });
    }
    if let Some((server, tool)) = state.app_only_tool(name) {
        return Err(CallError::AppOnly {
            server: server.clone(),
            tool: tool.clone(),
        });
    }
    if let Some(held) = state.held_tool(name) {
        return Err(CallError::Held {
            server: held.server.clone(),
            tool: held.tool.clone(),
            finding: held.finding.clone(),
        });
    }
    // A name that names no server may mean a tool of a server that is not up.
    let unavailable = match server {
        Some(_) => Vec::new(),
        None => gateway
            .catalogs
            .unavailable()
            .into_iter()
            .map(|unavailable| unavailable.reason)
            .collect(),
    };
    Err(unknown_tool(
        &state,
        name,
        server.as_deref(),
        flavor,
        unavailable,
    ))
}

/// Why `name` names no tool, whatever the server's state and however the code spelled the name:
/// what was asked, the closest tools, and what exists (the tools of the server it names, or the
/// servers when it names none).
fn unknown_tool(
    state: &CatalogState,
    name: &str,
    server: Option<&str>,
    flavor: Flavor,
    unavailable: Vec<String>,
) -> CallError {
    let catalog = &state.catalog;
    let named = match server {
        Some(server) => NamedServer::Server {
            name: catalog
                .namespaces()
                .find(|(_, original)| *original == server)
                .map_or(server, |(guest, _)| guest)
                .to_owned(),
            tools: catalog
                .entries()
                .iter()
                .filter(|entry| entry.server == server)
                .map(|entry| entry.guest_tool.clone())
                .collect(),
        },
        None => {
            // In name order: the catalog's own follows which server was ready first.
            let mut servers: Vec<String> = catalog
                .namespaces()
                .map(|(guest, _)| guest.to_owned())
                .collect();
            servers.sort_unstable();
            NamedServer::None {
                namespace: namespace_part(name).map(str::to_owned),
                servers,
            }
        }
    };
    let mut suggestions = catalog.suggest(name);
    // A name whose server exists most likely means one of that server's tools: the others come
    // close only when none of its own does.
    if let Some(server) = server {
        let own = |suggestion: &String| {
            catalog
                .resolve(suggestion)
                .is_some_and(|entry| entry.server == server)
        };
        if suggestions.iter().any(own) {
            suggestions.retain(own);
        }
    }
    CallError::UnknownTool {
        name: name.to_owned(),
        server: Box::new(named),
        suggestions,
        search: flavor.search_function(),
        unavailable,
    }
}

/// The value a tool call resolves to: `structuredContent` when present; else the text of a single
/// text item as [`text_result::text_value`] reads it (with the numbers it kept as text); else the
/// content array.
pub(crate) fn convert(result: CallToolResult) -> (Value, Vec<KeptAsText>) {
    if let Some(structured) = result.structured_content {
        return (structured, Vec::new());
    }
    // The text is moved, not copied: it may be tens of megabytes.
    let content = match <[ContentBlock; 1]>::try_from(result.content) {
        Ok([ContentBlock::Text(text)]) => return text_result::text_value(text.text),
        Ok(only) => serde_json::to_value(only),
        Err(content) => serde_json::to_value(content),
    };
    (content.unwrap_or(Value::Null), Vec::new())
}

fn error_text(result: &CallToolResult) -> String {
    let mut text: String = result
        .content
        .iter()
        .filter_map(|item| item.as_text().map(|text| text.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    if text.is_empty() {
        text = result
            .structured_content
            .as_ref()
            .map_or_else(|| "(no message)".to_owned(), Value::to_string);
    }
    cut(text, MAX_ERROR_TEXT)
}

/// One violation, its message cut: it may quote the whole value that broke the schema.
fn describe_violation(path: &str, message: &str) -> String {
    let path = if path.is_empty() { "(arguments)" } else { path };
    cut(format!("{path}: {message}"), MAX_ERROR_TEXT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_follows_the_contract() {
        let value = |result: CallToolResult| convert(result).0;
        let text = |text: &str| value(CallToolResult::success(vec![ContentBlock::text(text)]));
        let structured = CallToolResult::structured(serde_json::json!({"a": 1}));
        assert_eq!(value(structured), serde_json::json!({"a": 1}));
        assert_eq!(text("[1, 2]"), serde_json::json!([1, 2]));
        assert_eq!(text("{\"a\": 1.10}"), serde_json::json!({"a": 1.1}));
        // Anything but an object or array is the string the server sent.
        for sent in [
            "hello",
            "1.10",
            "12345678901234567890",
            "-0",
            "1e3",
            "null",
            "\"quoted\"",
        ] {
            assert_eq!(text(sent), serde_json::json!(sent), "{sent}");
        }
        // A number no double holds is its text, and said so.
        let (huge, kept) = convert(CallToolResult::success(vec![ContentBlock::text(
            "{\"id\": 12345678901234567890}",
        )]));
        assert_eq!(huge, serde_json::json!({"id": "12345678901234567890"}));
        assert_eq!(kept.len(), 1);
        let two = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(
            value(two),
            serde_json::json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
        );
    }
}
