//! Finding a tool by the name guest code or a model wrote: exact forms, then suggestions.

use std::collections::HashMap;

use crate::Entry;
use crate::text::{edit_distance, stem, words};

/// How many suggestions an unknown name gets at most.
const MAX_SUGGESTIONS: usize = 3;
/// How similar (0 to 1) a name must be to be suggested.
const MIN_SIMILARITY: f64 = 0.5;

/// Name tables of one catalog.
#[derive(Debug, Clone, Default)]
pub(crate) struct NameIndex {
    /// (guest server, guest tool) → entry.
    by_guest: HashMap<(String, String), usize>,
    /// (configured server, upstream tool) → entry.
    by_original: HashMap<(String, String), usize>,
    /// Guest server name → configured name.
    server_by_guest: HashMap<String, String>,
    /// Configured server name → guest name.
    server_by_original: HashMap<String, String>,
}

impl NameIndex {
    /// Indexes `entries` and the `(guest, configured)` server names.
    pub(crate) fn new(namespaces: &[(String, String)], entries: &[Entry]) -> Self {
        let mut index = Self::default();
        for (guest, original) in namespaces {
            index
                .server_by_guest
                .insert(guest.clone(), original.clone());
            index
                .server_by_original
                .insert(original.clone(), guest.clone());
        }
        for (position, entry) in entries.iter().enumerate() {
            index.by_guest.insert(
                (entry.guest_server.clone(), entry.guest_tool.clone()),
                position,
            );
            index
                .by_original
                .insert((entry.server.clone(), entry.tool.clone()), position);
        }
        index
    }

    /// The entry `name` refers to: `server.tool` (guest names), `tools.server.tool`,
    /// `mcp__server__tool` (original names), or original names with a dot when only one tool
    /// fits.
    pub(crate) fn resolve(&self, name: &str) -> Option<usize> {
        let name = name.trim();
        if let Some(found) = self.dotted(name) {
            return Some(found);
        }
        if let Some(found) = name
            .strip_prefix("tools.")
            .and_then(|rest| self.dotted(rest))
        {
            return Some(found);
        }
        let rest = name.strip_prefix("mcp__")?;
        let splits: Vec<(&str, &str)> = rest
            .match_indices("__")
            .map(|(at, _)| (&rest[..at], &rest[at + 2..]))
            .collect();
        // The documented form first: original server and tool names.
        for (server, tool) in &splits {
            if let Some(&found) = self.by_original.get(&key(server, tool)) {
                return Some(found);
            }
        }
        unique(
            splits
                .iter()
                .flat_map(|(server, tool)| self.candidates(server, tool)),
        )
    }

    /// `server.tool`: guest names first, then any split at a dot that names exactly one tool.
    fn dotted(&self, name: &str) -> Option<usize> {
        if let Some((server, tool)) = name.split_once('.')
            && let Some(&found) = self.by_guest.get(&key(server, tool))
        {
            return Some(found);
        }
        unique(
            name.match_indices('.')
                .flat_map(|(at, _)| self.candidates(&name[..at], &name[at + 1..])),
        )
    }

    /// Entries that `server` and `tool` name, each spelled the guest or the original way.
    fn candidates(&self, server: &str, tool: &str) -> Vec<usize> {
        let mut found = Vec::new();
        let guest_server = self.server_by_original.get(server).map(String::as_str);
        let original_server = self.server_by_guest.get(server).map(String::as_str);
        let lookups = [
            self.by_guest.get(&key(server, tool)),
            self.by_original.get(&key(server, tool)),
            original_server.and_then(|server| self.by_original.get(&key(server, tool))),
            guest_server.and_then(|server| self.by_guest.get(&key(server, tool))),
        ];
        for entry in lookups.into_iter().flatten() {
            if !found.contains(entry) {
                found.push(*entry);
            }
        }
        found
    }
}

fn key(server: &str, tool: &str) -> (String, String) {
    (server.to_owned(), tool.to_owned())
}

/// The single distinct value, if there is exactly one.
fn unique(candidates: impl IntoIterator<Item = usize>) -> Option<usize> {
    let mut only = None;
    for candidate in candidates {
        match only {
            None => only = Some(candidate),
            Some(existing) if existing == candidate => {}
            Some(_) => return None,
        }
    }
    only
}

/// Up to three guest names (`server.tool`) close to `name`, closest first.
pub(crate) fn suggest(entries: &[Entry], name: &str) -> Vec<String> {
    let name = name.trim();
    let name = name.strip_prefix("tools.").unwrap_or(name);
    let (server_part, tool_part) = match name.strip_prefix("mcp__") {
        Some(rest) => match rest.split_once("__") {
            Some((server, tool)) => (Some(server), tool),
            None => (None, rest),
        },
        None => match name.split_once('.') {
            Some((server, tool)) => (Some(server), tool),
            None => (None, name),
        },
    };
    let tool_part = comparable(tool_part);
    if tool_part.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(f64, String)> = Vec::new();
    for entry in entries {
        let tool_similarity = similarity(&tool_part, &comparable(&entry.guest_tool))
            .max(similarity(&tool_part, &comparable(&entry.tool)));
        if tool_similarity < MIN_SIMILARITY {
            continue;
        }
        let score = match server_part {
            Some(server) => {
                let server = comparable(server);
                let server_similarity = similarity(&server, &comparable(&entry.guest_server))
                    .max(similarity(&server, &comparable(&entry.server)));
                0.8 * tool_similarity + 0.2 * server_similarity
            }
            None => tool_similarity,
        };
        scored.push((
            score,
            format!("{}.{}", entry.guest_server, entry.guest_tool),
        ));
    }
    scored.sort_by(|left, right| right.0.total_cmp(&left.0).then(left.1.cmp(&right.1)));
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, name)| name)
        .collect()
}

/// Lowercase with every separator as `_`, so `get-sum`, `get.sum` and `Get_Sum` compare equal.
fn comparable(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// 0 (nothing alike) to 1 (equal): the best of spelling closeness, containment and shared words.
fn similarity(query: &str, candidate: &str) -> f64 {
    if query == candidate {
        return 1.0;
    }
    let longest = query.chars().count().max(candidate.chars().count());
    let distance = edit_distance(query, candidate, longest);
    let spelling = 1.0 - distance as f64 / longest.max(1) as f64;
    let containment =
        if query.len() >= 3 && (candidate.contains(query) || query.contains(candidate)) {
            0.6
        } else {
            0.0
        };
    let query_words: Vec<String> = words(query).iter().map(|word| stem(word)).collect();
    let candidate_words: Vec<String> = words(candidate).iter().map(|word| stem(word)).collect();
    let shared = query_words
        .iter()
        .filter(|word| candidate_words.contains(word))
        .count();
    let all = query_words.len() + candidate_words.len() - shared;
    let overlap = if all == 0 {
        0.0
    } else {
        shared as f64 / all as f64
    };
    spelling.max(containment).max(overlap)
}
