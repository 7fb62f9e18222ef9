//! Which upstream tools guest code may call, and which calls need the person at the client:
//! allow, ask, deny and approve rules, globs over `server.tool`, and what tools whose server says
//! nothing about what they change get (`--unannotated`).
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
    /// Compiles `allow` and `deny` globs over `server.tool` (`*` any run of characters, `?` one,
    /// `[abc]` a class; `github.*`, `*.delete_*`; a lone `*` is every tool). `Err` names the rule
    /// and what is wrong.
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

    /// `Ok` when `server`'s tool `tool` (original names) may be called, else why not.
    pub fn decide(&self, server: &str, tool: &str) -> Result<(), Denial> {
        if let Some(outer) = &self.outer {
            outer.decide(server, tool)?;
        }
        if self.is_open() {
            return Ok(());
        }
        let name = format!("{server}.{tool}");
        if let Some(rule) = self.deny.iter().find(|rule| rule.matcher.is_match(&name)) {
            return Err(Denial::Denied {
                rule: rule.pattern.clone(),
            });
        }
        // An ask rule admits the tool as an allow rule does: it is in the ask tier.
        if !self.allow.is_empty()
            && !self.allow.iter().any(|rule| rule.matcher.is_match(&name))
            && !self.ask.iter().any(|rule| rule.matcher.is_match(&name))
        {
            return Err(Denial::NotAllowed);
        }
        Ok(())
    }

    /// The ask rule, as written, that makes every call of `server`'s tool `tool` (original
    /// names) ask, if one matches it.
    pub fn asking_rule(&self, server: &str, tool: &str) -> Option<&str> {
        if let Some(rule) = self
            .outer
            .as_ref()
            .and_then(|outer| outer.asking_rule(server, tool))
        {
            return Some(rule);
        }
        let name = format!("{server}.{tool}");
        self.ask
            .iter()
            .find(|rule| rule.matcher.is_match(&name))
            .map(|rule| rule.pattern.as_str())
    }

    /// The approve rule, as written, that pre-approves `server`'s tool `tool` (original names),
    /// if one matches it. It says nothing about whether the tool exists for code: that is
    /// [`decide`](Self::decide)'s.
    pub fn approving_rule(&self, server: &str, tool: &str) -> Option<&str> {
        let name = format!("{server}.{tool}");
        self.approve
            .iter()
            .find(|rule| rule.matcher.is_match(&name))
            .map(|rule| rule.pattern.as_str())
            .or_else(|| {
                self.outer
                    .as_ref()
                    .and_then(|outer| outer.approving_rule(server, tool))
            })
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

/// Globs over `server.tool` written as the policy's rules are (`github.*`, `*.read_*`), for
/// choosing tools by name apart from the policy: the upstream tools listed directly to clients.
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

    /// Whether `pattern` (one of [`patterns`](Self::patterns)) matches `server`'s tool `tool`
    /// (original names).
    pub fn pattern_matches(&self, pattern: &str, server: &str, tool: &str) -> bool {
        let name = format!("{server}.{tool}");
        self.rules
            .iter()
            .any(|rule| rule.pattern == pattern && rule.matcher.is_match(&name))
    }

    /// Whether any glob matches `server`'s tool `tool` (original names).
    pub fn matches(&self, server: &str, tool: &str) -> bool {
        let name = format!("{server}.{tool}");
        self.rules.iter().any(|rule| rule.matcher.is_match(&name))
    }
}

fn compile(patterns: &[String], kind: &str) -> Result<Vec<Rule>, String> {
    patterns
        .iter()
        .map(|pattern| {
            let pattern = pattern.trim();
            // `*` (and `**`) crosses dots: it is every tool of every server, as `*.*` is.
            let every_tool = !pattern.is_empty() && pattern.chars().all(|c| c == '*');
            if !pattern.contains('.') && !every_tool {
                return Err(without_dot(kind, pattern));
            }
            let glob: Glob = GlobBuilder::new(pattern)
                .literal_separator(false)
                .build()
                .map_err(|error| format!("{kind} rule \"{pattern}\": {error}"))?;
            Ok(Rule {
                pattern: pattern.to_owned(),
                matcher: glob.compile_matcher(),
            })
        })
        .collect()
}

/// The message for a rule that names no `server.tool`: what the two readings would be written as.
fn without_dot(kind: &str, pattern: &str) -> String {
    if pattern.is_empty() {
        return format!(
            "{kind} rule \"\": a rule names server.tool, such as \"github.*\" for every tool of a server, \"*.delete_file\" for a tool of any server, or \"*\" for every tool"
        );
    }
    format!(
        "{kind} rule \"{pattern}\": a rule names server.tool, such as \"{pattern}.*\" for every tool of a server \"{pattern}\" or \"*.{pattern}\" for a tool \"{pattern}\" of any server (\"*\" alone is every tool)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(list: &[&str]) -> Vec<String> {
        list.iter().map(|rule| (*rule).to_owned()).collect()
    }

    #[test]
    fn deny_wins_and_allow_rules_close_everything_else() {
        let open = Policy::default();
        assert!(open.decide("github", "delete_repo").is_ok());

        let policy = Policy::new(
            &rules(&["github.*", "memory.read_*"]),
            &rules(&["*.delete_*"]),
        )
        .unwrap();
        assert!(policy.decide("github", "create_issue").is_ok());
        assert_eq!(
            policy.decide("github", "delete_repo"),
            Err(Denial::Denied {
                rule: "*.delete_*".to_owned()
            })
        );
        assert!(policy.decide("memory", "read_graph").is_ok());
        assert_eq!(
            policy.decide("memory", "create_entities"),
            Err(Denial::NotAllowed)
        );
        assert_eq!(policy.decide("slack", "post"), Err(Denial::NotAllowed));

        // Dots and dashes in names are plain characters; `*` crosses them.
        let policy = Policy::new(&[], &rules(&["fixture.dotted.*", "*.*-name"])).unwrap();
        assert!(policy.decide("fixture", "dotted.name").is_err());
        assert!(policy.decide("fixture", "dash-name").is_err());
        assert!(policy.decide("fixture", "dotted").is_ok());
    }

    #[test]
    fn rules_that_cannot_match_as_meant_are_refused() {
        let error = Policy::new(&rules(&["github"]), &[]).unwrap_err();
        assert_eq!(
            error,
            "allow rule \"github\": a rule names server.tool, such as \"github.*\" for every tool of a server \"github\" or \"*.github\" for a tool \"github\" of any server (\"*\" alone is every tool)"
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
        assert!(globs.matches("fixture", "add"));
        assert!(!globs.matches("fixture", "add_more"));
        assert!(globs.matches("memory", "read_graph"));
        assert!(globs.pattern_matches("memory.read_*", "memory", "read_graph"));
        assert!(!globs.pattern_matches("fixture.add", "memory", "read_graph"));
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
            assert!(policy.decide("github", "delete_repo").is_ok(), "{star}");
            assert!(policy.decide("fixture", "dotted.name").is_ok(), "{star}");
            let policy = Policy::new(&[], &rules(&[star])).unwrap();
            assert!(policy.decide("github", "list_issues").is_err(), "{star}");
        }
        let policy = Policy::default().with_approve(&rules(&["*"])).unwrap();
        assert_eq!(policy.approving_rule("any", "tool"), Some("*"));
    }

    #[test]
    fn approve_rules_pre_approve_and_decide_nothing_about_existence() {
        let policy = Policy::new(&rules(&["filesystem.*"]), &rules(&["*.delete_*"]))
            .unwrap()
            .with_approve(&rules(&["filesystem.write_file", "*.delete_*", "memory.*"]))
            .unwrap();
        assert_eq!(
            policy.approving_rule("filesystem", "write_file"),
            Some("filesystem.write_file")
        );
        // An allow rule pre-approves nothing.
        assert_eq!(policy.approving_rule("filesystem", "move_file"), None);
        // An approve rule does not make a denied or unallowed tool exist.
        assert!(policy.decide("filesystem", "delete_file").is_err());
        assert_eq!(
            policy.decide("memory", "delete_entities"),
            Err(Denial::Denied {
                rule: "*.delete_*".to_owned()
            })
        );
        assert_eq!(
            policy.decide("memory", "create_entities"),
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
        assert!(approving.decide("slack", "post").is_ok());
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
            policy.asking_rule("github", "create_issue"),
            Some("github.*")
        );
        assert_eq!(policy.asking_rule("memory", "read_graph"), None);
        // An ask rule is a tier: its tools exist beside the allowlist's.
        assert!(policy.decide("github", "create_issue").is_ok());
        assert!(policy.decide("memory", "read_graph").is_ok());
        assert_eq!(policy.decide("slack", "post"), Err(Denial::NotAllowed));
        assert!(policy.decide("github", "delete_repo").is_err());
        assert_eq!(policy.unannotated(), Unannotated::Ask);
        assert_eq!(
            policy.describe(),
            "allow: memory.*; deny: *.delete_*; ask: github.*; unannotated: ask"
        );
        // Ask rules alone keep nothing out.
        let asking = Policy::default().with_ask(&rules(&["github.*"])).unwrap();
        assert!(asking.is_open());
        assert!(asking.decide("slack", "post").is_ok());
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
        assert!(inner.decide("fixture", "crash").is_err());
        // Kept out by the inner rules: a deny, and the inner allowlist.
        assert!(inner.decide("github", "delete_repo").is_err());
        assert_eq!(inner.decide("memory", "read"), Err(Denial::NotAllowed));
        assert!(inner.decide("github", "get_issue").is_ok());
        // Either's ask rules ask; the outer's are named first.
        assert_eq!(
            inner.asking_rule("github", "merge_pr"),
            Some("github.merge_*")
        );
        assert_eq!(inner.asking_rule("fixture", "echo"), Some("fixture.echo"));
        assert_eq!(inner.asking_rule("fixture", "add"), None);
        // Either's approve rules pre-approve.
        assert_eq!(
            inner.approving_rule("fixture", "remove"),
            Some("fixture.remove")
        );
        assert_eq!(inner.approving_rule("memory", "delete"), Some("memory.*"));
        assert_eq!(inner.approving_rule("github", "close"), None);
    }
}
