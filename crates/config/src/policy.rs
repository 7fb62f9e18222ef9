//! Which upstream tools guest code may call, and which calls need the person at the client:
//! allow, ask, deny and approve rules, globs over a tool's names, and what tools whose server says
//! nothing about what they change get (`--unannotated`).
//!
//! A rule matches a tool by each name toolweave shows or takes for it ([`ToolName`]): the guest
//! name code calls (`everything.get_sum`), the server's own (`everything.get-sum`), and
//! `mcp__everything__get-sum`. A rule written with `mcp__` is matched against that spelling,
//! any other against the dotted ones (the server and the tool each in either spelling).
//!
//! The people who run toolweave set the rules (flags, settings file); nothing an execution sends
//! can change them. Deny wins, then ask, then allow. Deny rules keep tools out; with allow rules,
//! a tool neither an allow nor an ask rule matches is kept out too (allow rules are an
//! allowlist, as they always were). An ask rule makes each call of the tools it matches ask,
//! whatever their annotations and approve rules say. Approve rules only pre-approve tools that
//! exist and would otherwise ask because of their annotations: they never let a tool through
//! that deny and allow keep out, and never silence an ask rule.

use globset::{Glob, GlobBuilder, GlobMatcher};

/// The compiled rules.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    allow: Vec<Rule>,
    deny: Vec<Rule>,
    ask: Vec<Rule>,
    approve: Vec<Rule>,
    unannotated: Unannotated,
    /// The rules these are set within (an identity's, within the gateway's): a tool must pass
    /// both, asks when either asks, and is pre-approved when either approves.
    outer: Option<std::sync::Arc<Policy>>,
}

/// What calls of a tool whose server says nothing about what it changes (neither `readOnlyHint:
/// true` nor a `destructiveHint`) get.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unannotated {
    /// They go ahead without asking (most servers annotate nothing, and the client already asks
    /// before each `execute_code`).
    #[default]
    Allow,
    /// They ask as destructive tools do (the MCP specification's cautious reading: a tool that
    /// does not say otherwise may be destructive).
    Ask,
}

impl Unannotated {
    /// `allow` or `ask`, as the flag and the settings file write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Unannotated::Allow => "allow",
            Unannotated::Ask => "ask",
        }
    }
}

#[derive(Debug, Clone)]
struct Rule {
    pattern: String,
    matcher: GlobMatcher,
    /// Written as `mcp__server__tool` (matched against that spelling only), else as
    /// `server.tool` (matched against the guest and the upstream spelling).
    prefixed: bool,
}

impl Rule {
    fn matches(&self, name: &ToolName<'_>) -> bool {
        if self.prefixed {
            return self
                .matcher
                .is_match(format!("mcp__{}__{}", name.server, name.tool));
        }
        let servers = [name.server, name.guest_server];
        let tools = [name.tool, name.guest_tool];
        // Each of the server and the tool in either spelling, each pair once.
        servers.iter().enumerate().any(|(at, server)| {
            (at == 0 || *server != servers[0])
                && tools.iter().enumerate().any(|(at, tool)| {
                    (at == 0 || *tool != tools[0])
                        && self.matcher.is_match(format!("{server}.{tool}"))
                })
        })
    }
}

/// The names one tool (or one server method, such as `resources/read`) goes by, each of which
/// a rule may be written in: `server.tool` as the server lists it, `guest_server.guest_tool` as
/// code calls it and toolweave shows it (and either half in either spelling), and
/// `mcp__server__tool`.
///
/// The guest names are the catalog's (`toolweave_catalog::GuestNames`, assigned over each
/// server's whole tool list); the caller builds this from them, so a rule and the name shown
/// never disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolName<'a> {
    /// The server's configured name.
    pub server: &'a str,
    /// The tool's name as the server lists it.
    pub tool: &'a str,
    /// The server's name in code (`tools.<guest_server>`).
    pub guest_server: &'a str,
    /// The tool's name in code (`tools.<guest_server>.<guest_tool>`).
    pub guest_tool: &'a str,
}

impl<'a> ToolName<'a> {
    /// A name whose guest spelling is the upstream's (a server method, or a tool of a server
    /// whose names need no change).
    pub fn upstream(server: &'a str, tool: &'a str) -> Self {
        Self {
            server,
            tool,
            guest_server: server,
            guest_tool: tool,
        }
    }

    /// `server.tool`, the names as configured and listed (for people and logs).
    pub fn upstream_name(&self) -> String {
        format!("{}.{}", self.server, self.tool)
    }

    /// `guest_server.guest_tool`, the name code calls and toolweave shows.
    pub fn guest_name(&self) -> String {
        format!("{}.{}", self.guest_server, self.guest_tool)
    }
}

/// A rule that matches no tool it was checked against, for the warning that names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnmatchedRule {
    /// Which rules it is one of: `allow`, `deny`, `ask` or `approve` (or the kind a
    /// [`ToolGlobs`] was made with).
    pub kind: String,
    /// The rule, as written.
    pub pattern: String,
}

/// Why a tool may not be called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denial {
    /// A deny rule matches it.
    Denied {
        /// The rule, as written.
        rule: String,
    },
    /// Allow rules are set and none matches it.
    NotAllowed,
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Denial::Denied { rule } => write!(f, "the deny rule \"{rule}\" matches it"),
            Denial::NotAllowed => f.write_str("no allow rule matches it"),
        }
    }
}

impl Policy {
    /// Compiles `allow` and `deny` globs over a tool's names (`*` any run of characters, `?` one,
    /// `[abc]` a class; `github.*`, `*.delete_*`, `mcp__github__*`; a lone `*` is every tool).
    /// `Err` names the rule and what is wrong.
    pub fn new(allow: &[String], deny: &[String]) -> Result<Self, String> {
        Ok(Self {
            allow: compile(allow, "allow")?,
            deny: compile(deny, "deny")?,
            ask: Vec::new(),
            approve: Vec::new(),
            unannotated: Unannotated::default(),
            outer: None,
        })
    }

    /// These rules set within `outer` (an identity's within the gateway's): a tool either keeps
    /// out stays out, a tool either's ask rules match asks, and either's approve rules
    /// pre-approve. These rules' `unannotated` applies.
    pub fn within(mut self, outer: std::sync::Arc<Policy>) -> Self {
        self.outer = Some(outer);
        self
    }

    /// These rules with `ask` globs added: each call of a tool they match asks the person at the
    /// client, and no approve rule pre-approves it. `Err` names the rule and what is wrong.
    pub fn with_ask(mut self, ask: &[String]) -> Result<Self, String> {
        self.ask = compile(ask, "ask")?;
        Ok(self)
    }

    /// These rules with `mode` for tools whose server says nothing about what they change.
    pub fn with_unannotated(mut self, mode: Unannotated) -> Self {
        self.unannotated = mode;
        self
    }

    /// What calls of tools whose server says nothing about what they change get.
    pub fn unannotated(&self) -> Unannotated {
        self.unannotated
    }

    /// These rules with `approve` globs added: destructive tools they match are called without
    /// asking anyone. `Err` names the rule and what is wrong.
    pub fn with_approve(mut self, approve: &[String]) -> Result<Self, String> {
        self.approve = compile(approve, "approve")?;
        Ok(self)
    }

    /// Whether no allow or deny rule is set (every tool exists for code).
    pub fn is_open(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    /// `Ok` when the tool `name` may be called, else why not.
    pub fn decide(&self, name: &ToolName<'_>) -> Result<(), Denial> {
        if let Some(outer) = &self.outer {
            outer.decide(name)?;
        }
        if self.is_open() {
            return Ok(());
        }
        if let Some(rule) = self.deny.iter().find(|rule| rule.matches(name)) {
            return Err(Denial::Denied {
                rule: rule.pattern.clone(),
            });
        }
        // An ask rule admits the tool as an allow rule does: it is in the ask tier.
        if !self.allow.is_empty()
            && !self.allow.iter().any(|rule| rule.matches(name))
            && !self.ask.iter().any(|rule| rule.matches(name))
        {
            return Err(Denial::NotAllowed);
        }
        Ok(())
    }

    /// The ask rule, as written, that makes every call of the tool `name` ask, if one matches
    /// it.
    pub fn asking_rule(&self, name: &ToolName<'_>) -> Option<&str> {
        if let Some(rule) = self
            .outer
            .as_ref()
            .and_then(|outer| outer.asking_rule(name))
        {
            return Some(rule);
        }
        self.ask
            .iter()
            .find(|rule| rule.matches(name))
            .map(|rule| rule.pattern.as_str())
    }

    /// The approve rule, as written, that pre-approves the tool `name`, if one matches it. It
    /// says nothing about whether the tool exists for code: that is [`decide`](Self::decide)'s.
    pub fn approving_rule(&self, name: &ToolName<'_>) -> Option<&str> {
        self.approve
            .iter()
            .find(|rule| rule.matches(name))
            .map(|rule| rule.pattern.as_str())
            .or_else(|| {
                self.outer
                    .as_ref()
                    .and_then(|outer| outer.approving_rule(name))
            })
    }

    /// These rules (not those they are set within) that match none of `names`, in the order
    /// allow, deny, ask, approve.
    pub fn unmatched(&self, names: &[ToolName<'_>]) -> Vec<UnmatchedRule> {
        [
            ("allow", &self.allow),
            ("deny", &self.deny),
            ("ask", &self.ask),
            ("approve", &self.approve),
        ]
        .into_iter()
        .flat_map(|(kind, rules)| unmatched(kind, rules, names))
        .collect()
    }

    /// Whether no rule names a tool (these, not those they are set within).
    pub fn names_no_tool(&self) -> bool {
        [&self.allow, &self.deny, &self.ask, &self.approve]
            .iter()
            .all(|rules| rules.is_empty())
    }

    /// The rules as written, for people: `allow: a, b; deny: c; ask: d; approve: e;
    /// unannotated: ask`.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = [
            ("allow", &self.allow),
            ("deny", &self.deny),
            ("ask", &self.ask),
            ("approve", &self.approve),
        ]
        .into_iter()
        .filter(|(_, rules)| !rules.is_empty())
        .map(|(kind, rules)| {
            let patterns: Vec<&str> = rules.iter().map(|rule| rule.pattern.as_str()).collect();
            format!("{kind}: {}", patterns.join(", "))
        })
        .collect();
        if self.unannotated == Unannotated::Ask {
            parts.push("unannotated: ask".to_owned());
        }
        if parts.is_empty() {
            "every tool allowed".to_owned()
        } else {
            parts.join("; ")
        }
    }
}

/// Globs over a tool's names written as the policy's rules are (`github.*`, `*.read_*`,
/// `mcp__github__*`) and matched as they are, for choosing tools by name apart from the policy:
/// the upstream tools listed directly to clients, an execution's `allowedTools`.
#[derive(Debug, Clone, Default)]
pub struct ToolGlobs {
    rules: Vec<Rule>,
}

impl ToolGlobs {
    /// Compiles `patterns`; `Err` names the glob (as a `kind` rule) and what is wrong.
    pub fn new(patterns: &[String], kind: &str) -> Result<Self, String> {
        Ok(Self {
            rules: compile(patterns, kind)?,
        })
    }

    /// Whether no glob is given.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The globs, as written (trimmed).
    pub fn patterns(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|rule| rule.pattern.as_str())
    }

    /// Whether `pattern` (one of [`patterns`](Self::patterns)) matches the tool `name`.
    pub fn pattern_matches(&self, pattern: &str, name: &ToolName<'_>) -> bool {
        self.rules
            .iter()
            .any(|rule| rule.pattern == pattern && rule.matches(name))
    }

    /// Whether any glob matches the tool `name`.
    pub fn matches(&self, name: &ToolName<'_>) -> bool {
        self.rules.iter().any(|rule| rule.matches(name))
    }

    /// The globs that match none of `names`, each as a `kind` rule.
    pub fn unmatched(&self, kind: &str, names: &[ToolName<'_>]) -> Vec<UnmatchedRule> {
        unmatched(kind, &self.rules, names).collect()
    }
}

/// The rules of `rules` (of kind `kind`) that match none of `names`.
fn unmatched<'r>(
    kind: &'r str,
    rules: &'r [Rule],
    names: &'r [ToolName<'_>],
) -> impl Iterator<Item = UnmatchedRule> + 'r {
    rules
        .iter()
        .filter(|rule| !names.iter().any(|name| rule.matches(name)))
        .map(move |rule| UnmatchedRule {
            kind: kind.to_owned(),
            pattern: rule.pattern.clone(),
        })
}

fn compile(patterns: &[String], kind: &str) -> Result<Vec<Rule>, String> {
    patterns
        .iter()
        .map(|pattern| {
            let pattern = pattern.trim();
            // `*` (and `**`) crosses dots: it is every tool of every server, as `*.*` is.
            let every_tool = !pattern.is_empty() && pattern.chars().all(|c| c == '*');
            let prefixed = pattern.starts_with("mcp__");
            if !pattern.contains('.') && !every_tool && !prefixed {
                return Err(without_dot(kind, pattern));
            }
            let glob: Glob = GlobBuilder::new(pattern)
                .literal_separator(false)
                .build()
                .map_err(|error| format!("{kind} rule \"{pattern}\": {error}"))?;
            Ok(Rule {
                pattern: pattern.to_owned(),
                matcher: glob.compile_matcher(),
                prefixed,
            })
        })
        .collect()
}

/// The message for a rule that names no `server.tool` or `mcp__server__tool`: what the two
/// readings would be written as.
fn without_dot(kind: &str, pattern: &str) -> String {
    if pattern.is_empty() {
        return format!(
            "{kind} rule \"\": a rule names server.tool or mcp__server__tool, such as \"github.*\" for every tool of a server, \"*.delete_file\" for a tool of any server, or \"*\" for every tool"
        );
    }
    format!(
        "{kind} rule \"{pattern}\": a rule names server.tool or mcp__server__tool, such as \"{pattern}.*\" for every tool of a server \"{pattern}\" or \"*.{pattern}\" for a tool \"{pattern}\" of any server (\"*\" alone is every tool)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool whose names need no change in code.
    fn n<'a>(server: &'a str, tool: &'a str) -> ToolName<'a> {
        ToolName::upstream(server, tool)
    }

    fn rules(list: &[&str]) -> Vec<String> {
        list.iter().map(|rule| (*rule).to_owned()).collect()
    }

    #[test]
    fn deny_wins_and_allow_rules_close_everything_else() {
        let open = Policy::default();
        assert!(open.decide(&n("github", "delete_repo")).is_ok());

        let policy = Policy::new(
            &rules(&["github.*", "memory.read_*"]),
            &rules(&["*.delete_*"]),
        )
        .unwrap();
        assert!(policy.decide(&n("github", "create_issue")).is_ok());
        assert_eq!(
            policy.decide(&n("github", "delete_repo")),
            Err(Denial::Denied {
                rule: "*.delete_*".to_owned()
            })
        );
        assert!(policy.decide(&n("memory", "read_graph")).is_ok());
        assert_eq!(
            policy.decide(&n("memory", "create_entities")),
            Err(Denial::NotAllowed)
        );
        assert_eq!(policy.decide(&n("slack", "post")), Err(Denial::NotAllowed));

        // Dots and dashes in names are plain characters; `*` crosses them.
        let policy = Policy::new(&[], &rules(&["fixture.dotted.*", "*.*-name"])).unwrap();
        assert!(policy.decide(&n("fixture", "dotted.name")).is_err());
        assert!(policy.decide(&n("fixture", "dash-name")).is_err());
        assert!(policy.decide(&n("fixture", "dotted")).is_ok());
    }

    #[test]
    fn rules_that_cannot_match_as_meant_are_refused() {
        let error = Policy::new(&rules(&["github"]), &[]).unwrap_err();
        assert_eq!(
            error,
            "allow rule \"github\": a rule names server.tool or mcp__server__tool, such as \"github.*\" for every tool of a server \"github\" or \"*.github\" for a tool \"github\" of any server (\"*\" alone is every tool)"
        );
        let error = Policy::new(&[], &rules(&["github.[a"])).unwrap_err();
        assert!(error.starts_with("deny rule \"github.[a\""), "{error}");
        let error = Policy::default()
            .with_approve(&rules(&["write_file"]))
            .unwrap_err();
        assert!(
            error.starts_with("approve rule \"write_file\"") && error.contains("\"*.write_file\""),
            "{error}"
        );
        let error = Policy::new(&rules(&[" "]), &[]).unwrap_err();
        assert!(error.contains("or \"*\" for every tool"), "{error}");
    }

    #[test]
    fn tool_globs_match_as_rules_do_and_name_a_bad_one() {
        let globs = ToolGlobs::new(&rules(&["fixture.add", "memory.read_*"]), "direct").unwrap();
        assert!(globs.matches(&n("fixture", "add")));
        assert!(!globs.matches(&n("fixture", "add_more")));
        assert!(globs.matches(&n("memory", "read_graph")));
        assert!(globs.pattern_matches("memory.read_*", &n("memory", "read_graph")));
        assert!(!globs.pattern_matches("fixture.add", &n("memory", "read_graph")));
        assert_eq!(
            globs.patterns().collect::<Vec<_>>(),
            ["fixture.add", "memory.read_*"]
        );
        let error = ToolGlobs::new(&rules(&["add"]), "direct").unwrap_err();
        assert!(
            error.starts_with("direct rule \"add\"") && error.contains("\"*.add\""),
            "{error}"
        );
        assert!(ToolGlobs::default().is_empty());
    }

    #[test]
    fn a_lone_star_is_every_tool() {
        for star in ["*", "**", " * "] {
            let policy = Policy::new(&rules(&[star]), &[]).unwrap();
            assert!(policy.decide(&n("github", "delete_repo")).is_ok(), "{star}");
            assert!(
                policy.decide(&n("fixture", "dotted.name")).is_ok(),
                "{star}"
            );
            let policy = Policy::new(&[], &rules(&[star])).unwrap();
            assert!(
                policy.decide(&n("github", "list_issues")).is_err(),
                "{star}"
            );
        }
        let policy = Policy::default().with_approve(&rules(&["*"])).unwrap();
        assert_eq!(policy.approving_rule(&n("any", "tool")), Some("*"));
    }

    #[test]
    fn approve_rules_pre_approve_and_decide_nothing_about_existence() {
        let policy = Policy::new(&rules(&["filesystem.*"]), &rules(&["*.delete_*"]))
            .unwrap()
            .with_approve(&rules(&["filesystem.write_file", "*.delete_*", "memory.*"]))
            .unwrap();
        assert_eq!(
            policy.approving_rule(&n("filesystem", "write_file")),
            Some("filesystem.write_file")
        );
        // An allow rule pre-approves nothing.
        assert_eq!(policy.approving_rule(&n("filesystem", "move_file")), None);
        // An approve rule does not make a denied or unallowed tool exist.
        assert!(policy.decide(&n("filesystem", "delete_file")).is_err());
        assert_eq!(
            policy.decide(&n("memory", "delete_entities")),
            Err(Denial::Denied {
                rule: "*.delete_*".to_owned()
            })
        );
        assert_eq!(
            policy.decide(&n("memory", "create_entities")),
            Err(Denial::NotAllowed)
        );
        assert_eq!(
            policy.describe(),
            "allow: filesystem.*; deny: *.delete_*; approve: filesystem.write_file, *.delete_*, memory.*"
        );
        // Approve rules alone leave every tool in.
        let approving = Policy::default()
            .with_approve(&rules(&["filesystem.write_file"]))
            .unwrap();
        assert!(approving.is_open());
        assert!(approving.decide(&n("slack", "post")).is_ok());
        assert_eq!(approving.describe(), "approve: filesystem.write_file");
        assert_eq!(Policy::default().describe(), "every tool allowed");
    }

    #[test]
    fn ask_rules_admit_like_allow_rules_and_deny_still_wins() {
        let policy = Policy::new(&rules(&["memory.*"]), &rules(&["*.delete_*"]))
            .unwrap()
            .with_ask(&rules(&["github.*"]))
            .unwrap()
            .with_unannotated(Unannotated::Ask);
        assert_eq!(
            policy.asking_rule(&n("github", "create_issue")),
            Some("github.*")
        );
        assert_eq!(policy.asking_rule(&n("memory", "read_graph")), None);
        // An ask rule is a tier: its tools exist beside the allowlist's.
        assert!(policy.decide(&n("github", "create_issue")).is_ok());
        assert!(policy.decide(&n("memory", "read_graph")).is_ok());
        assert_eq!(policy.decide(&n("slack", "post")), Err(Denial::NotAllowed));
        assert!(policy.decide(&n("github", "delete_repo")).is_err());
        assert_eq!(policy.unannotated(), Unannotated::Ask);
        assert_eq!(
            policy.describe(),
            "allow: memory.*; deny: *.delete_*; ask: github.*; unannotated: ask"
        );
        // Ask rules alone keep nothing out.
        let asking = Policy::default().with_ask(&rules(&["github.*"])).unwrap();
        assert!(asking.is_open());
        assert!(asking.decide(&n("slack", "post")).is_ok());
        let error = Policy::default().with_ask(&rules(&["github"])).unwrap_err();
        assert!(error.starts_with("ask rule \"github\""), "{error}");
    }

    #[test]
    fn rules_within_others_pass_both_ask_with_either_and_approve_with_either() {
        let outer = std::sync::Arc::new(
            Policy::new(&[], &rules(&["*.crash"]))
                .and_then(|policy| policy.with_ask(&rules(&["github.merge_*"])))
                .and_then(|policy| policy.with_approve(&rules(&["memory.*"])))
                .unwrap(),
        );
        let inner = Policy::new(
            &rules(&["github.*", "fixture.*"]),
            &rules(&["github.delete_*"]),
        )
        .and_then(|policy| policy.with_ask(&rules(&["fixture.echo"])))
        .and_then(|policy| policy.with_approve(&rules(&["fixture.remove"])))
        .unwrap()
        .within(outer);
        // Kept out by the outer rules, whatever the inner allowlist says.
        assert!(inner.decide(&n("fixture", "crash")).is_err());
        // Kept out by the inner rules: a deny, and the inner allowlist.
        assert!(inner.decide(&n("github", "delete_repo")).is_err());
        assert_eq!(inner.decide(&n("memory", "read")), Err(Denial::NotAllowed));
        assert!(inner.decide(&n("github", "get_issue")).is_ok());
        // Either's ask rules ask; the outer's are named first.
        assert_eq!(
            inner.asking_rule(&n("github", "merge_pr")),
            Some("github.merge_*")
        );
        assert_eq!(
            inner.asking_rule(&n("fixture", "echo")),
            Some("fixture.echo")
        );
        assert_eq!(inner.asking_rule(&n("fixture", "add")), None);
        // Either's approve rules pre-approve.
        assert_eq!(
            inner.approving_rule(&n("fixture", "remove")),
            Some("fixture.remove")
        );
        assert_eq!(
            inner.approving_rule(&n("memory", "delete")),
            Some("memory.*")
        );
        assert_eq!(inner.approving_rule(&n("github", "close")), None);
    }

    /// `everything`'s `get-sum`, called `everything.get_sum` in code, on a server configured
    /// as `my-server` (`tools.my_server`).
    const GET_SUM: ToolName<'static> = ToolName {
        server: "my-server",
        tool: "get-sum",
        guest_server: "my_server",
        guest_tool: "get_sum",
    };

    #[test]
    fn every_rule_kind_matches_every_spelling_of_a_tool() {
        let spellings = [
            "my_server.get_sum",
            "my-server.get-sum",
            "mcp__my-server__get-sum",
            "my_server.get_*",
            "my-server.get-*",
            "mcp__my-server__get*",
            "*.get_sum",
            "my-server.get_sum",
            "mcp__*sum",
        ];
        let other = ToolName::upstream("my-server", "echo");
        for spelling in spellings {
            let rule = rules(&[spelling]);
            let denied = Policy::new(&[], &rule).unwrap();
            assert_eq!(
                denied.decide(&GET_SUM),
                Err(Denial::Denied {
                    rule: spelling.to_owned()
                }),
                "{spelling}"
            );
            assert!(denied.decide(&other).is_ok(), "{spelling}");
            let allowed = Policy::new(&rule, &[]).unwrap();
            assert!(allowed.decide(&GET_SUM).is_ok(), "{spelling}");
            assert_eq!(
                allowed.decide(&other),
                Err(Denial::NotAllowed),
                "{spelling}"
            );
            let asking = Policy::default().with_ask(&rule).unwrap();
            assert_eq!(asking.asking_rule(&GET_SUM), Some(spelling), "{spelling}");
            assert_eq!(asking.asking_rule(&other), None, "{spelling}");
            let approving = Policy::default().with_approve(&rule).unwrap();
            assert_eq!(
                approving.approving_rule(&GET_SUM),
                Some(spelling),
                "{spelling}"
            );
            let globs = ToolGlobs::new(&rule, "allowedTools").unwrap();
            assert!(globs.matches(&GET_SUM), "{spelling}");
            assert!(globs.pattern_matches(spelling, &GET_SUM), "{spelling}");
            assert!(!globs.matches(&other), "{spelling}");
        }
    }

    #[test]
    fn spellings_do_not_mix() {
        // `mcp__` takes the names as configured and listed, as `callMCPTool` does; a dotted rule
        // never matches the `mcp__` spelling.
        for spelling in ["mcp__my_server__get_sum", "mcp__*sum.*", "*__get-sum"] {
            let matched = Policy::new(&[], &rules(&[spelling]))
                .is_ok_and(|policy| policy.decide(&GET_SUM).is_err());
            assert!(!matched, "{spelling}");
        }
        // A server listing both `get_sum` and `get-sum`: code calls the second `get_sum_2`, and
        // a rule naming `get_sum` matches only the first.
        let second = ToolName {
            server: "everything",
            tool: "get-sum",
            guest_server: "everything",
            guest_tool: "get_sum_2",
        };
        let policy = Policy::new(&[], &rules(&["everything.get_sum"])).unwrap();
        assert!(policy.decide(&second).is_ok());
        assert!(
            policy
                .decide(&ToolName::upstream("everything", "get_sum"))
                .is_err()
        );
        assert!(
            policy
                .decide(&ToolName::upstream("everything", "get_sum_2"))
                .is_ok()
        );
    }

    #[test]
    fn rules_that_match_no_tool_are_named() {
        let policy = Policy::new(
            &rules(&["my_server.*", "*.nothing"]),
            &rules(&["mcp__my-server__get-sum"]),
        )
        .and_then(|policy| policy.with_ask(&rules(&["my-server.get_summ"])))
        .and_then(|policy| policy.with_approve(&rules(&["*"])))
        .unwrap();
        let unmatched = policy.unmatched(&[GET_SUM]);
        assert_eq!(
            unmatched,
            [
                UnmatchedRule {
                    kind: "allow".to_owned(),
                    pattern: "*.nothing".to_owned()
                },
                UnmatchedRule {
                    kind: "ask".to_owned(),
                    pattern: "my-server.get_summ".to_owned()
                },
            ]
        );
        let globs =
            ToolGlobs::new(&rules(&["mcp__my-server__*", "my-server.x"]), "--direct").unwrap();
        assert_eq!(
            globs.unmatched("--direct", &[GET_SUM]),
            [UnmatchedRule {
                kind: "--direct".to_owned(),
                pattern: "my-server.x".to_owned()
            }]
        );
    }
}
