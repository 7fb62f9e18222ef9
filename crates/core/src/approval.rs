//! Approval of calls to tools that say they are destructive.
//!
//! An upstream tool annotated `destructiveHint: true` (and not `readOnlyHint: true`) is called
//! only when an allow rule names it, or when the person at the client approves that one call.
//! The gateway asks through an [`Approver`] the transport provides (MCP elicitation); without one,
//! the call is refused with a message that says how to allow it.

use futures::future::BoxFuture;
use serde_json::Value;

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

/// Whether a tool's annotations say calling it needs approval.
pub(crate) fn needs_approval(annotations: Option<&Value>) -> bool {
    let Some(annotations) = annotations else {
        return false;
    };
    annotations.get("destructiveHint") == Some(&Value::Bool(true))
        && annotations.get("readOnlyHint") != Some(&Value::Bool(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn destructive_and_not_read_only_needs_approval() {
        assert!(needs_approval(Some(&json!({ "destructiveHint": true }))));
        assert!(needs_approval(Some(
            &json!({ "destructiveHint": true, "readOnlyHint": false })
        )));
        assert!(!needs_approval(Some(
            &json!({ "destructiveHint": true, "readOnlyHint": true })
        )));
        assert!(!needs_approval(Some(&json!({ "destructiveHint": false }))));
        assert!(!needs_approval(Some(&json!({}))));
        assert!(!needs_approval(None));
    }
}
