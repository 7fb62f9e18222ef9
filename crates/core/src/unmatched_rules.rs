//! Rules that match no tool of a ready server: a rule written for a tool that is not there (or
//! in a spelling no tool has) keeps out, asks or approves nothing, so toolweave says so at start
//! and in `toolweave tools`, naming the closest tools.

use toolweave_catalog::{Catalog, ToolDefinition};
use toolweave_config::{Policy, ToolGlobs, ToolName, UnmatchedRule};

use crate::catalog_state::CatalogState;
use crate::gateway::Gateway;

impl Gateway {
    /// One sentence per rule that matches no tool of the ready servers (kept out or not): the
    /// gateway's rules, then each of `identities`' own (`(name, rules)`), then `direct`'s. While
    /// a server is not ready, only rules that name a ready server are checked (a rule for the
    /// others may match once they are).
    pub async fn unmatched_rules(
        &self,
        identities: &[(String, Policy)],
        direct: Option<&ToolGlobs>,
    ) -> Vec<String> {
        let state = self.catalogs.current_catalog().await;
        let all_ready = self.unavailable().is_empty();
        unmatched_in(&state, self.policy(), identities, direct, all_ready)
    }

    /// Runs `read` on the current catalog and the names of every tool of the ready servers,
    /// the ones the rules keep out included.
    pub async fn read_tool_names<T>(&self, read: impl FnOnce(&Catalog, &[ToolName<'_>]) -> T) -> T {
        let state = self.catalogs.current_catalog().await;
        read(&state.catalog, &state.tool_names())
    }
}

/// The sentences of [`Gateway::unmatched_rules`] for tool lists read without a gateway
/// (`toolweave doctor` starts the servers itself, `toolweave config` reads the tools last
/// pinned): `tools` holds each server of `servers` whose list is known.
pub fn unmatched_rules_among(
    servers: &[String],
    tools: Vec<(String, Vec<ToolDefinition>)>,
    policy: &Policy,
    identities: &[(String, Policy)],
) -> Vec<String> {
    let all_ready = servers
        .iter()
        .all(|server| tools.iter().any(|(known, _)| known == server));
    let state = CatalogState::new(
        servers,
        tools,
        &std::collections::HashMap::new(),
        0,
        policy,
        None,
        None,
    );
    unmatched_in(&state, policy, identities, None, all_ready)
}

/// The rules of `policy`, `identities` and `direct` that match no tool of `state`. Unless
/// `all_ready`, only rules that name a ready server are checked (a rule for the others may match
/// once they are).
fn unmatched_in(
    state: &CatalogState,
    policy: &Policy,
    identities: &[(String, Policy)],
    direct: Option<&ToolGlobs>,
    all_ready: bool,
) -> Vec<String> {
    let names = state.tool_names();
    let mut found: Vec<(String, UnmatchedRule)> = policy
        .unmatched(&names)
        .into_iter()
        .map(|rule| (String::new(), rule))
        .collect();
    for (identity, rules) in identities {
        found.extend(
            rules
                .unmatched(&names)
                .into_iter()
                .map(|rule| (format!("identity \"{identity}\": "), rule)),
        );
    }
    if let Some(direct) = direct {
        found.extend(
            direct
                .unmatched("--direct", &names)
                .into_iter()
                .map(|rule| (String::new(), rule)),
        );
    }
    found
        .into_iter()
        .filter(|(_, rule)| all_ready || names_ready_server(&rule.pattern, state))
        .map(|(whose, rule)| sentence(&whose, &rule, &state.catalog))
        .collect()
}

/// Whether `pattern` names, without a glob, a server that is ready (in either spelling).
fn names_ready_server(pattern: &str, state: &CatalogState) -> bool {
    let server = match pattern.strip_prefix("mcp__") {
        Some(rest) => rest.split_once("__").map(|(server, _)| server),
        None => pattern.split_once('.').map(|(server, _)| server),
    };
    server.is_some_and(|server| {
        !server.contains(['*', '?', '[', '{'])
            && state
                .ready
                .iter()
                .any(|ready| ready == server || state.names.server(ready) == server)
    })
}

/// `deny rule "everything.get_summ" matches no tool; did you mean everything.get_sum?`
fn sentence(whose: &str, rule: &UnmatchedRule, catalog: &Catalog) -> String {
    let plain: String = rule
        .pattern
        .chars()
        .filter(|c| !"*?[]{}".contains(*c))
        .collect();
    let suggestions = catalog.suggest(&plain);
    let mut text = format!(
        "{whose}{} rule \"{}\" matches no tool of the ready servers, so it has no effect",
        rule.kind, rule.pattern
    );
    if suggestions.is_empty() {
        text.push_str(
            " (a rule names server.tool, in code's names or the server's, or \
             mcp__server__tool; `toolweave tools` lists them)",
        );
    } else {
        text.push_str(&format!("; did you mean {}?", suggestions.join(", ")));
    }
    text
}
