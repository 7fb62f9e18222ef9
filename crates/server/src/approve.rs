//! Asking the person at the client, through MCP elicitation, whether a call of a tool in the ask
//! tier may go ahead, and remembering answers that cover more than one call.
//!
//! The question offers scopes: this call only, this tool for the rest of this execution, or
//! this tool for the rest of the client session. An answer with a wider scope is kept (by the
//! execution's [`AskTheClient`], or by the session's [`SessionApprovals`]) and answers later
//! calls of that tool without asking. One question is open per session at a time, so calls that
//! run together (`Promise.all` of twenty writes) wait for the first answer instead of asking
//! twenty times.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::Peer;
use serde_json::{Value, json};
use toolweave_core::{Approval, ApprovalRequest, ApprovalScope, Approver};

/// The most of a call's arguments shown in the question.
const MAX_SHOWN_ARGUMENTS: usize = 2000;

/// What one client session approved for its rest, and its turn to ask.
#[derive(Debug, Default)]
pub(crate) struct SessionApprovals {
    /// Tools (`server.tool`) approved for the rest of the session.
    tools: Mutex<HashSet<String>>,
    /// Held while a question is open: one question at a time per session.
    asking: tokio::sync::Mutex<()>,
}

/// Asks the person at the client about the calls of one execution (or one call of a tool listed
/// directly).
#[derive(Debug)]
pub(crate) struct AskTheClient {
    peer: Peer<RoleServer>,
    /// Whether code asks for the calls (else the client called a tool listed directly, and there
    /// is no execution to approve a tool for).
    from_code: bool,
    /// Tools approved for the rest of this execution.
    execution: Arc<Mutex<HashSet<String>>>,
    session: Arc<SessionApprovals>,
}

impl AskTheClient {
    /// An approver for one execution (`from_code`) or one direct call in `session`.
    pub(crate) fn new(
        peer: Peer<RoleServer>,
        from_code: bool,
        session: Arc<SessionApprovals>,
    ) -> Self {
        Self {
            peer,
            from_code,
            execution: Arc::default(),
            session,
        }
    }
}

/// The scope an earlier answer gave `tool`, if one covers it.
fn covered(
    execution: &Mutex<HashSet<String>>,
    session: &SessionApprovals,
    tool: &str,
) -> Option<ApprovalScope> {
    // A poisoned lock only means a panic elsewhere; the set itself is whole.
    let holds = |set: &Mutex<HashSet<String>>| {
        set.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(tool)
    };
    if holds(execution) {
        Some(ApprovalScope::Execution)
    } else if holds(&session.tools) {
        Some(ApprovalScope::Session)
    } else {
        None
    }
}

impl Approver for AskTheClient {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, Approval> {
        let peer = self.peer.clone();
        let from_code = self.from_code;
        let execution = self.execution.clone();
        let session = self.session.clone();
        Box::pin(async move {
            if let Some(scope) = covered(&execution, &session, &request.tool) {
                return Approval::Approved {
                    scope,
                    asked: false,
                };
            }
            let supported = peer
                .peer_info()
                .is_some_and(|info| info.capabilities.elicitation.is_some());
            if !supported {
                return Approval::Unavailable(
                    "this MCP client cannot be asked (it does not support elicitation)".to_owned(),
                );
            }
            let _turn = session.asking.lock().await;
            // An answer given while this call waited for its turn may cover it.
            if let Some(scope) = covered(&execution, &session, &request.tool) {
                return Approval::Approved {
                    scope,
                    asked: false,
                };
            }
            let params = match question(&request, from_code) {
                Ok(params) => params,
                Err(error) => {
                    return Approval::Unavailable(format!(
                        "the question could not be built: {error}"
                    ));
                }
            };
            let answer = match peer.create_elicitation(params).await {
                Ok(answer) => answer,
                Err(error) => {
                    return Approval::Unavailable(format!("asking the client failed ({error})"));
                }
            };
            let content = answer.content.unwrap_or_default();
            if answer.action != ElicitationAction::Accept
                || content.get("approve") != Some(&Value::Bool(true))
            {
                return Approval::Declined;
            }
            // A scope the question did not offer (or none: a client that shows only the
            // checkbox) approves this call only.
            let scope = content
                .get("scope")
                .and_then(Value::as_str)
                .and_then(ApprovalScope::parse)
                .filter(|scope| from_code || *scope != ApprovalScope::Execution)
                .unwrap_or(ApprovalScope::Call);
            let set = match scope {
                ApprovalScope::Call => None,
                ApprovalScope::Execution => Some(&*execution),
                ApprovalScope::Session => Some(&session.tools),
            };
            if let Some(set) = set {
                set.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(request.tool.clone());
            }
            Approval::Approved { scope, asked: true }
        })
    }
}

/// The elicitation for `request`: the tool, why it asks, its arguments, and the scopes offered.
fn question(request: &ApprovalRequest, from_code: bool) -> Result<ElicitRequestParams, String> {
    let mut arguments = serde_json::to_string_pretty(&request.arguments)
        .unwrap_or_else(|_| request.arguments.to_string());
    if arguments.len() > MAX_SHOWN_ARGUMENTS {
        let mut end = MAX_SHOWN_ARGUMENTS;
        while !arguments.is_char_boundary(end) {
            end -= 1;
        }
        arguments.truncate(end);
        arguments.push_str("\n…");
    }
    let tool = &request.tool;
    let mut scopes = vec![json!({ "const": "call", "title": "This call only" })];
    if from_code {
        scopes.push(json!({
            "const": "execution",
            "title": format!("Every call of {tool} for the rest of this execution"),
        }));
    }
    scopes.push(json!({
        "const": "session",
        "title": format!("Every call of {tool} for the rest of this session"),
    }));
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
        } = question(&request, true).unwrap()
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
        assert_eq!(offered, ["call", "execution", "session"]);
        assert_eq!(schema["required"], json!(["approve"]));

        let ElicitRequestParams::FormElicitationParams {
            requested_schema, ..
        } = question(&request, false).unwrap()
        else {
            panic!("a form");
        };
        let schema = serde_json::to_value(&requested_schema).unwrap();
        assert_eq!(
            schema["properties"]["scope"]["oneOf"]
                .as_array()
                .unwrap()
                .len(),
            2,
            "no execution to approve a tool for: {schema}"
        );
    }
}
