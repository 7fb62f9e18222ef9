//! Approval of calls: which tools ask the person at the client before each call, and how one
//! answer can approve a batch of calls.
//!
//! A tool's tier ([`Tier`]) is decided in one place, [`tier`], from the policy's rules and the
//! tool's annotations: an ask rule asks for every call (approve rules do not apply); a tool its
//! server marks destructive (`destructiveHint: true`, not `readOnlyHint: true`) asks unless an
//! approve rule matches it; a tool whose server says nothing about what it changes follows
//! `--unannotated` (allow by default; with `ask`, it asks unless an approve rule matches it);
//! every other tool goes ahead. Allow and deny rules decide which tools exist; they pre-approve
//! nothing. The gateway asks through an [`Approver`] the transport provides (MCP elicitation, or
//! a one-time approval page on loopback); without one, the call is refused with a message that
//! says what the person running toolweave can change. An answer may cover more than its call
//! ([`ApprovalScope`]): the approver remembers it and answers later calls it covers without
//! asking.

use futures::future::BoxFuture;
use serde_json::Value;
use toolweave_catalog::{Annotations, Entry};
use toolweave_config::{Policy, Unannotated};

/// The calls of one execution waiting for a person's answer now, by tool: an execution that
/// runs out of time while one waits is told so, with what to change.
#[derive(Debug, Default)]
pub(crate) struct Waiting(std::sync::Mutex<Vec<String>>);

impl Waiting {
    /// Counts a call of `tool` as waiting until the guard is dropped.
    pub(crate) fn wait(&self, tool: &str) -> WaitingCall<'_> {
        self.lock().push(tool.to_owned());
        WaitingCall {
            waiting: self,
            tool: tool.to_owned(),
        }
    }

    /// The tool of the call that has waited longest, if any waits.
    pub(crate) fn first(&self) -> Option<String> {
        self.lock().first().cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A call counted in [`Waiting`] while it lives.
pub(crate) struct WaitingCall<'a> {
    waiting: &'a Waiting,
    tool: String,
}

impl Drop for WaitingCall<'_> {
    fn drop(&mut self) {
        let mut tools = self.waiting.lock();
        if let Some(index) = tools.iter().position(|tool| *tool == self.tool) {
            tools.remove(index);
        }
    }
}

/// One call waiting for approval.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    /// The tool, as `server.tool`.
    pub tool: String,
    /// Its arguments, as the call would send them.
    pub arguments: Value,
    /// Why this call asks, in words for the person asked ("its server marks it destructive").
    pub reason: String,
}

/// What an approval covers besides the call it was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApprovalScope {
    /// This call only.
    Call,
    /// Every call of this tool for the rest of this execution.
    Execution,
    /// Every call of this tool for the rest of this client session.
    Session,
    /// Calls of this tool for the rest of this client session whose arguments equal the
    /// approved call's on the keys [`Approval::Approved`] names (on all of them when it names
    /// none).
    Matching,
}

impl ApprovalScope {
    /// `call`, `execution` or `session`: the word the question offers and the audit log writes.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalScope::Call => "call",
            ApprovalScope::Execution => "execution",
            ApprovalScope::Session => "session",
            ApprovalScope::Matching => "matching",
        }
    }

    /// The scope `word` names ([`as_str`](Self::as_str)'s words).
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "call" => Some(ApprovalScope::Call),
            "execution" => Some(ApprovalScope::Execution),
            "session" => Some(ApprovalScope::Session),
            "matching" => Some(ApprovalScope::Matching),
            _ => None,
        }
    }
}

/// Where the person answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnsweredVia {
    /// The client's form (MCP elicitation).
    Elicitation,
    /// toolweave's approval page, in a browser.
    Page,
    /// `toolweave approve`, in a terminal.
    Terminal,
}

impl AnsweredVia {
    /// `elicitation`, `page` or `terminal`: the word the audit log writes.
    pub fn as_str(self) -> &'static str {
        match self {
            AnsweredVia::Elicitation => "elicitation",
            AnsweredVia::Page => "page",
            AnsweredVia::Terminal => "terminal",
        }
    }
}

/// What the person asked answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Go ahead. `asked` is false when an earlier answer of a wider `scope` covers this call.
    Approved {
        /// What the answer covers.
        scope: ApprovalScope,
        /// With [`ApprovalScope::Matching`], the argument keys later calls must match on (all
        /// of the arguments when empty).
        matching: Vec<String>,
        /// Whether the person was asked for this very call.
        asked: bool,
        /// Where the answer that covers this call was given.
        via: AnsweredVia,
    },
    /// They said no (or dismissed the question).
    Declined(AnsweredVia),
    /// They were asked and nobody answered in time; why, with what to change.
    Unanswered(String),
    /// Nobody could be asked; why.
    Unavailable(String),
}

impl Approval {
    /// This one call approved, as the person just answered through the client's form.
    pub const APPROVED_ONCE: Approval = Approval::Approved {
        scope: ApprovalScope::Call,
        matching: Vec::new(),
        asked: true,
        via: AnsweredVia::Elicitation,
    };
}

/// Asks the person at the client whether a call may go ahead. An approver may remember an
/// answer whose scope is wider than its call and answer later calls it covers without asking.
pub trait Approver: Send + Sync + std::fmt::Debug {
    /// Asks about `request`.
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, Approval>;
}

/// A tool's tier: whether its calls go ahead without asking, and why. (Tools a deny rule, or an
/// allowlist, keeps out have no tier: they are not in the catalog.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tier {
    /// Its calls go ahead without asking anyone.
    Allow(AllowReason),
    /// The person at the client is asked before its calls.
    Ask(AskReason),
}

/// Why a tool's calls go ahead without asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowReason {
    /// Its server marks it read-only.
    ReadOnly,
    /// Its server marks it not destructive.
    NotDestructive,
    /// Its server says nothing about what it changes, and `--unannotated` is `allow`.
    Unannotated,
    /// It would ask for `because`, and this approve rule (as written) pre-approves it.
    PreApproved {
        /// The approve rule.
        rule: String,
        /// Why it would ask without the rule.
        because: AskReason,
    },
}

/// Why a tool's calls ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskReason {
    /// This ask rule (as written) matches it.
    AskRule(String),
    /// Its server marks it destructive.
    Destructive,
    /// Its server says nothing about what it changes, and `--unannotated` is `ask`.
    Unannotated,
}

impl Tier {
    /// `allow` or `ask`.
    pub fn name(&self) -> &'static str {
        match self {
            Tier::Allow(_) => "allow",
            Tier::Ask(_) => "ask",
        }
    }
}

impl std::fmt::Display for AllowReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AllowReason::ReadOnly => f.write_str("its server marks it read-only"),
            AllowReason::NotDestructive => f.write_str("its server marks it not destructive"),
            AllowReason::Unannotated => f.write_str(
                "its server says nothing about what it changes, and --unannotated is allow",
            ),
            AllowReason::PreApproved { rule, because } => {
                write!(
                    f,
                    "{because}, and the approve rule \"{rule}\" pre-approves it"
                )
            }
        }
    }
}

impl std::fmt::Display for AskReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AskReason::AskRule(rule) => write!(f, "the ask rule \"{rule}\" matches it"),
            AskReason::Destructive => f.write_str("its server marks it destructive"),
            AskReason::Unannotated => f.write_str(
                "its server says nothing about what it changes, and --unannotated is ask",
            ),
        }
    }
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tier::Allow(reason) => write!(f, "allow: {reason}"),
            Tier::Ask(reason) => write!(f, "ask: {reason}"),
        }
    }
}

/// The tier of `entry` under `policy`: its rules and the tool's annotations.
pub fn tier(policy: &Policy, entry: &Entry) -> Tier {
    let name = crate::catalog_state::entry_name(entry);
    if let Some(rule) = policy.asking_rule(&name) {
        return Tier::Ask(AskReason::AskRule(rule.to_owned()));
    }
    let because = match what_it_changes(entry.annotations.as_ref()) {
        Changes::Nothing => return Tier::Allow(AllowReason::ReadOnly),
        Changes::NothingDestructive => return Tier::Allow(AllowReason::NotDestructive),
        Changes::Unsaid if policy.unannotated() == Unannotated::Allow => {
            return Tier::Allow(AllowReason::Unannotated);
        }
        Changes::Unsaid => AskReason::Unannotated,
        Changes::Destroys => AskReason::Destructive,
    };
    match policy.approving_rule(&name) {
        Some(rule) => Tier::Allow(AllowReason::PreApproved {
            rule: rule.to_owned(),
            because,
        }),
        None => Tier::Ask(because),
    }
}

/// What a tool's annotations say it changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Changes {
    /// `readOnlyHint: true`.
    Nothing,
    /// `destructiveHint: false` (it may add, not destroy).
    NothingDestructive,
    /// `destructiveHint: true` (and not read-only).
    Destroys,
    /// Neither: no annotations, or none about this.
    Unsaid,
}

fn what_it_changes(annotations: Option<&Annotations>) -> Changes {
    let Some(annotations) = annotations else {
        return Changes::Unsaid;
    };
    if annotations.read_only == Some(true) {
        return Changes::Nothing;
    }
    match annotations.destructive {
        Some(true) => Changes::Destroys,
        Some(false) => Changes::NothingDestructive,
        None => Changes::Unsaid,
    }
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
    fn annotations_say_what_a_tool_changes() {
        assert_eq!(
            what_it_changes(Some(&hints(None, Some(true)))),
            Changes::Destroys
        );
        assert_eq!(
            what_it_changes(Some(&hints(Some(false), Some(true)))),
            Changes::Destroys
        );
        assert_eq!(
            what_it_changes(Some(&hints(Some(true), Some(true)))),
            Changes::Nothing
        );
        assert_eq!(
            what_it_changes(Some(&hints(None, Some(false)))),
            Changes::NothingDestructive
        );
        assert_eq!(what_it_changes(Some(&hints(None, None))), Changes::Unsaid);
        assert_eq!(
            what_it_changes(Some(&hints(Some(false), None))),
            Changes::Unsaid
        );
        assert_eq!(what_it_changes(None), Changes::Unsaid);
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

    fn rules(list: &[&str]) -> Vec<String> {
        list.iter().map(|rule| (*rule).to_owned()).collect()
    }

    #[test]
    fn only_an_approve_rule_pre_approves_a_destructive_tool() {
        let destructive = Some(hints(None, Some(true)));
        let write = entry("filesystem", "write_file", destructive.clone());
        let delete = entry("filesystem", "delete_file", destructive);
        let read = entry("filesystem", "read_file", Some(hints(Some(true), None)));

        // Allow rules, however wide, leave each destructive call to be asked about.
        let allowing = Policy::new(&rules(&["filesystem.*", "*.*"]), &[]).unwrap();
        assert_eq!(tier(&allowing, &write), Tier::Ask(AskReason::Destructive));
        assert_eq!(tier(&allowing, &read), Tier::Allow(AllowReason::ReadOnly));

        let approving = Policy::new(&rules(&["filesystem.*"]), &[])
            .unwrap()
            .with_approve(&rules(&["filesystem.write_file"]))
            .unwrap();
        assert_eq!(
            tier(&approving, &write),
            Tier::Allow(AllowReason::PreApproved {
                rule: "filesystem.write_file".to_owned(),
                because: AskReason::Destructive
            })
        );
        assert_eq!(tier(&approving, &delete), Tier::Ask(AskReason::Destructive));
        // A read-only tool needs nothing, whatever the approve rules.
        let everything = Policy::default().with_approve(&rules(&["*"])).unwrap();
        assert_eq!(tier(&everything, &read), Tier::Allow(AllowReason::ReadOnly));
        assert_eq!(
            tier(&everything, &delete).to_string(),
            "allow: its server marks it destructive, and the approve rule \"*\" pre-approves it"
        );
    }

    #[test]
    fn unannotated_tools_follow_the_mode_and_ask_rules_beat_approve_rules() {
        let bare = entry("notes", "save", None);
        let additive = entry("notes", "append", Some(hints(None, Some(false))));
        let open = Policy::default();
        assert_eq!(tier(&open, &bare), Tier::Allow(AllowReason::Unannotated));
        let cautious = Policy::default().with_unannotated(Unannotated::Ask);
        assert_eq!(tier(&cautious, &bare), Tier::Ask(AskReason::Unannotated));
        assert_eq!(
            tier(&cautious, &additive),
            Tier::Allow(AllowReason::NotDestructive)
        );
        let approved = cautious.clone().with_approve(&rules(&["notes.*"])).unwrap();
        assert_eq!(
            tier(&approved, &bare),
            Tier::Allow(AllowReason::PreApproved {
                rule: "notes.*".to_owned(),
                because: AskReason::Unannotated
            })
        );
        // An ask rule asks whatever the annotations and approve rules say.
        let asking = approved.with_ask(&rules(&["notes.append"])).unwrap();
        assert_eq!(
            tier(&asking, &additive),
            Tier::Ask(AskReason::AskRule("notes.append".to_owned()))
        );
        let read = entry("notes", "append", Some(hints(Some(true), None)));
        assert_eq!(tier(&asking, &read).name(), "ask");
        assert_eq!(
            tier(&asking, &read).to_string(),
            "ask: the ask rule \"notes.append\" matches it"
        );
    }

    #[test]
    fn scopes_read_as_they_are_written() {
        for scope in [
            ApprovalScope::Call,
            ApprovalScope::Execution,
            ApprovalScope::Session,
            ApprovalScope::Matching,
        ] {
            assert_eq!(ApprovalScope::parse(scope.as_str()), Some(scope));
        }
        assert_eq!(ApprovalScope::parse("forever"), None);
    }
}
