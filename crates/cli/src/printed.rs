//! What `toolweave tools` and `toolweave types` print of a gateway's catalog, whether the
//! gateway was started for the command or is a running one asked over its socket (`live.rs`).

use std::io::Write;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use toolweave_core::{Flavor, Gateway};

/// What a command prints: its standard output and its standard error.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Printed {
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Printed {
    /// Writes both out.
    pub(crate) fn print(&self) -> Result<()> {
        std::io::stdout().lock().write_all(self.stdout.as_bytes())?;
        std::io::stderr().lock().write_all(self.stderr.as_bytes())?;
        Ok(())
    }
}

/// The typings `--python` asks for.
pub(crate) fn flavor(python: bool) -> Flavor {
    if python {
        Flavor::Python
    } else {
        Flavor::TypeScript
    }
}

/// What `toolweave tools` asks.
pub(crate) struct ToolsQuestion {
    pub(crate) query: String,
    pub(crate) limit: usize,
    pub(crate) json: bool,
    pub(crate) python: bool,
}

/// What `toolweave tools` prints for `question` against `gateway`. With `settle`, the search
/// first waits for servers still starting (a gateway started for this command); without, it
/// reads the catalog as it is (a running gateway, asked from outside).
pub(crate) async fn tools_printed(
    gateway: &Gateway,
    question: &ToolsQuestion,
    identities: &[(String, toolweave_config::Policy)],
    settle: bool,
) -> Result<Printed> {
    let (query, limit, flavor) = (
        question.query.clone(),
        question.limit,
        flavor(question.python),
    );
    let answer = if settle {
        gateway.search(query, limit, flavor).await?
    } else {
        gateway.search_now(query, limit, flavor).await?
    };
    let mut printed = Printed::default();
    let (stdout, stderr) = (&mut printed.stdout, &mut printed.stderr);
    if question.json {
        stderr.push_str(&unavailable_text(gateway));
        if answer.omitted > 0 {
            stderr.push_str(&format!(
                "toolweave: {} more matching tools are left out (--max-result-bytes)\n",
                answer.omitted
            ));
        }
        let mut results = serde_json::to_value(&answer.results)?;
        for result in results.as_array_mut().into_iter().flatten() {
            let tier = result["name"]
                .as_str()
                .and_then(|name| gateway.tier_of(name));
            if let (Some(tier), Some(result)) = (tier, result.as_object_mut()) {
                result.insert("tier".to_owned(), tier.name().into());
                result.insert("why".to_owned(), tier_reason(&tier).into());
            }
        }
        stdout.push_str(&serde_json::to_string_pretty(&results)?);
        stdout.push('\n');
    } else {
        let unavailable = gateway.unavailable();
        stdout.push_str(&toolweave_core::search_text(
            &question.query,
            &answer,
            &unavailable,
        ));
        stdout.push('\n');
        for text in [
            tiers_text(gateway, &answer.results),
            hidden_text(gateway, &answer.results).await,
        ] {
            if !text.is_empty() {
                stdout.push_str(&text);
                stdout.push('\n');
            }
        }
    }
    let unmatched = gateway.unmatched_rules(identities, None).await;
    if !unmatched.is_empty() && question.json {
        for line in &unmatched {
            stderr.push_str(&format!("toolweave: {line}\n"));
        }
    } else if !unmatched.is_empty() {
        stdout.push_str("\nRules that match no tool:\n");
        for line in &unmatched {
            stdout.push_str(&format!("  {line}\n"));
        }
    }
    for (server, count) in held_by_server(gateway) {
        let line = format!("server \"{server}\": {}\n", crate::pins::held_note(count));
        if question.json {
            stderr.push_str(&format!("toolweave: {line}"));
        } else {
            stdout.push_str(&line);
        }
    }
    Ok(printed)
}

/// Each found tool's tier and why, then the tools the policy keeps out and why.
fn tiers_text(gateway: &Gateway, results: &[toolweave_core::SearchResult]) -> String {
    let mut text = String::new();
    if !results.is_empty() {
        text.push_str("\nTiers (whether a call asks the person at the client, and why):\n");
    }
    for result in results {
        if let Some(tier) = gateway.tier_of(&result.name) {
            text.push_str(&format!(
                "  {}: {} ({})\n",
                result.name,
                tier.name(),
                tier_reason(&tier)
            ));
        }
    }
    let kept_out = gateway.kept_out();
    if !kept_out.is_empty() {
        text.push_str("\nKept out by the policy (deny):\n");
        for (name, reason) in kept_out {
            text.push_str(&format!("  {name}: {reason}\n"));
        }
    }
    text.trim_end().to_owned()
}

/// How many tools of each server the gateway holds because their definitions changed since
/// they were pinned.
fn held_by_server(gateway: &Gateway) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for held in gateway.held() {
        match counts.last_mut() {
            Some((server, count)) if *server == held.server => *count += 1,
            _ => counts.push((held.server, 1)),
        }
    }
    counts
}

/// The found tools whose title or description holds characters that do not show, with those
/// characters written as escapes: the model reads the text without them, a person should know
/// they are there.
async fn hidden_text(gateway: &Gateway, results: &[toolweave_core::SearchResult]) -> String {
    let mut text = String::new();
    for result in results {
        let named = gateway
            .read_catalog(false, |catalog, _| {
                catalog
                    .resolve(&result.name)
                    .map(|entry| (entry.server.clone(), entry.tool.clone()))
            })
            .await;
        let Some((server, tool)) = named else {
            continue;
        };
        let Some(definitions) = gateway.upstream().ready_tools(&server) else {
            continue;
        };
        let Some(definition) = definitions.iter().find(|listed| listed.name == tool) else {
            continue;
        };
        for (what, value) in [
            ("title", &definition.title),
            ("description", &definition.description),
        ] {
            if let Some(value) = value
                && toolweave_catalog::visible(value) != *value
            {
                text.push_str(&format!(
                    "  {}: its {what} holds characters that do not show, left out of what the model reads: {}\n",
                    result.name,
                    toolweave_catalog::visible(value)
                ));
            }
        }
    }
    if text.is_empty() {
        return text;
    }
    format!("\nCharacters that do not show:\n{}", text.trim_end())
}

/// Why `tier`, in words.
fn tier_reason(tier: &toolweave_core::Tier) -> String {
    match tier {
        toolweave_core::Tier::Allow(reason) => reason.to_string(),
        toolweave_core::Tier::Ask(reason) => reason.to_string(),
    }
}

/// What `toolweave types` prints of the catalog of a running `gateway` as it is now.
pub(crate) async fn types_printed(gateway: &Gateway, flavor: Flavor) -> Printed {
    let stdout = gateway
        .read_catalog(false, |catalog, _| flavor.declarations(catalog))
        .await;
    Printed {
        stdout,
        stderr: unavailable_text(gateway),
    }
}

/// The lines that name the servers whose tools are missing from an answer, for stderr: they are
/// never dropped silently.
pub(crate) fn unavailable_text(gateway: &Gateway) -> String {
    let mut text = String::new();
    for status in gateway.upstream().status() {
        if !status.is_ready() {
            text.push_str(&format!(
                "toolweave: server \"{}\" is not available: {}\n",
                status.name,
                status.describe()
            ));
        }
    }
    text
}
