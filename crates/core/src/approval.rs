//! Approval of calls to tools that say they are destructive.
//!
//! An upstream tool annotated `destructiveHint: true` (and not `readOnlyHint: true`) is called
//! only when an approve rule matches it (`--approve`, `"approve"` in the settings file), or when
//! the person at the client approves that one call. Allow and deny rules decide which tools exist
//! for code; they pre-approve nothing. What a call to a tool needs is decided in one place,
//! [`gate`]. The gateway asks through an [`Approver`] the transport provides (MCP elicitation);
//! without one, the call is refused with a message that names the approve rule that would admit
//! just that tool.

use futures::future::BoxFuture;
use serde_json::Value;
use toolweave_catalog::{Annotations, Entry};
use toolweave_config::Policy;

/// One call waiting for approval.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    /// The tool, as `server.tool`.
    pub tool: String,
    /// Its arguments, as the call would send them.
    pub arguments: Value,
}

/// What the person asked answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Go ahead.
    Approved,
    /// They said no (or dismissed the question).
    Declined,
    /// Nobody could be asked; why.
    Unavailable(String),
}

/// Asks the person at the client whether a call may go ahead.
pub trait Approver: Send + Sync + std::fmt::Debug {
    /// Asks about `request`.
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, Approval>;
}

/// What a call to one tool needs before it goes to its server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Nothing: its server does not mark it destructive.
    Open,
    /// It is destructive, and this approve rule (as written) approves every call beforehand.
    PreApproved(String),
    /// It is destructive: the person at the client is asked about each call.
    Ask,
}

/// What a call to `entry` needs, from its annotations and the approve rules of `policy`.
pub(crate) fn gate(policy: &Policy, entry: &Entry) -> Gate {
    if !needs_approval(entry.annotations.as_ref()) {
        return Gate::Open;
    }
    match policy.approving_rule(&entry.server, &entry.tool) {
        Some(rule) => Gate::PreApproved(rule.to_owned()),
        None => Gate::Ask,
    }
}

/// Whether a tool's annotations say calling it needs approval.
fn needs_approval(annotations: Option<&Annotations>) -> bool {
    let Some(annotations) = annotations else {
        return false;
    };
    annotations.destructive == Some(true) && annotations.read_only != Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolweave_catalog::ToolSchema;

    fn hints(read_only: Option<bool>, destructive: Option<bool>) -> Annotations {
        Annotations {
            read_only,
            destructive,
            ..Annotations::default()
        }
    }

    #[test]
    fn destructive_and_not_read_only_needs_approval() {
        assert!(needs_approval(Some(&hints(None, Some(true)))));
        assert!(needs_approval(Some(&hints(Some(false), Some(true)))));
        assert!(!needs_approval(Some(&hints(Some(true), Some(true)))));
        assert!(!needs_approval(Some(&hints(None, Some(false)))));
        assert!(!needs_approval(Some(&hints(None, None))));
        assert!(!needs_approval(None));
    }

    fn entry(server: &str, tool: &str, annotations: Option<Annotations>) -> Entry {
        Entry {
            server: server.to_owned(),
            tool: tool.to_owned(),
            guest_server: server.to_owned(),
            guest_tool: tool.to_owned(),
            title: None,
            description: None,
            input_schema: ToolSchema::from_value(&json!({ "type": "object" })).unwrap(),
            output_schema: None,
            annotations,
        }
    }

    #[test]
    fn only_an_approve_rule_pre_approves_a_destructive_tool() {
        let rules = |list: &[&str]| {
            list.iter()
                .map(|rule| (*rule).to_owned())
                .collect::<Vec<_>>()
        };
        let destructive = Some(hints(None, Some(true)));
        let write = entry("filesystem", "write_file", destructive.clone());
        let delete = entry("filesystem", "delete_file", destructive);
        let read = entry("filesystem", "read_file", Some(hints(Some(true), None)));

        // Allow rules, however wide, leave each destructive call to be asked about.
        let allowing = Policy::new(&rules(&["filesystem.*", "*.*"]), &[]).unwrap();
        assert_eq!(gate(&allowing, &write), Gate::Ask);
        assert_eq!(gate(&allowing, &read), Gate::Open);

        let approving = Policy::new(&rules(&["filesystem.*"]), &[])
            .unwrap()
            .with_approve(&rules(&["filesystem.write_file"]))
            .unwrap();
        assert_eq!(
            gate(&approving, &write),
            Gate::PreApproved("filesystem.write_file".to_owned())
        );
        assert_eq!(gate(&approving, &delete), Gate::Ask);
        // A tool that is not destructive needs nothing, whatever the rules.
        let everything = Policy::default().with_approve(&rules(&["*"])).unwrap();
        assert_eq!(gate(&everything, &read), Gate::Open);
        assert_eq!(
            gate(&everything, &delete),
            Gate::PreApproved("*".to_owned())
        );
    }
}
