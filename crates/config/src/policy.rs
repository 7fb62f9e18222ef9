//! Which upstream tools guest code may call: allow and deny rules, globs over `server.tool`.
//!
//! The people who run toolweave set the rules (flags, settings file); nothing an execution sends
//! can change them. Deny wins over allow. With no allow rule every tool not denied is allowed;
//! with allow rules, only tools one of them matches.

use globset::{Glob, GlobBuilder, GlobMatcher};

/// The compiled rules.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    allow: Vec<Rule>,
    deny: Vec<Rule>,
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
    /// `[abc]` a class; `github.*`, `*.delete_*`). `Err` names the rule and what is wrong.
    pub fn new(allow: &[String], deny: &[String]) -> Result<Self, String> {
        Ok(Self {
            allow: compile(allow, "allow")?,
            deny: compile(deny, "deny")?,
        })
    }

    /// Whether no rule is set (everything is allowed).
    pub fn is_open(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    /// `Ok` when `server`'s tool `tool` (original names) may be called, else why not.
    pub fn decide(&self, server: &str, tool: &str) -> Result<(), Denial> {
        if self.is_open() {
            return Ok(());
        }
        let name = format!("{server}.{tool}");
        if let Some(rule) = self.deny.iter().find(|rule| rule.matcher.is_match(&name)) {
            return Err(Denial::Denied {
                rule: rule.pattern.clone(),
            });
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|rule| rule.matcher.is_match(&name)) {
            return Err(Denial::NotAllowed);
        }
        Ok(())
    }

    /// Whether an allow rule names this tool: for a tool that needs approval (destructive), the
    /// people who run toolweave have given it beforehand.
    pub fn allows_explicitly(&self, server: &str, tool: &str) -> bool {
        let name = format!("{server}.{tool}");
        self.decide(server, tool).is_ok()
            && self.allow.iter().any(|rule| rule.matcher.is_match(&name))
    }

    /// The rules as written, for people: `allow: a, b; deny: c`.
    pub fn describe(&self) -> String {
        let list = |rules: &[Rule]| {
            rules
                .iter()
                .map(|rule| rule.pattern.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match (self.allow.is_empty(), self.deny.is_empty()) {
            (true, true) => "every tool allowed".to_owned(),
            (false, true) => format!("allow: {}", list(&self.allow)),
            (true, false) => format!("deny: {}", list(&self.deny)),
            (false, false) => format!("allow: {}; deny: {}", list(&self.allow), list(&self.deny)),
        }
    }
}

fn compile(patterns: &[String], kind: &str) -> Result<Vec<Rule>, String> {
    patterns
        .iter()
        .map(|pattern| {
            let pattern = pattern.trim();
            if !pattern.contains('.') {
                return Err(format!(
                    "{kind} rule \"{pattern}\": a rule names server.tool, such as \"{pattern}.*\" for every tool of a server or \"*.{pattern}\" for a tool of any server"
                ));
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
        assert!(error.contains("\"github.*\""), "{error}");
        let error = Policy::new(&[], &rules(&["github.[a"])).unwrap_err();
        assert!(error.starts_with("deny rule \"github.[a\""), "{error}");
    }
}
