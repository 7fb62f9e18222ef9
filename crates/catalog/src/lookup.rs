//! Finding a tool by the name guest code or a model wrote: exact forms, then suggestions.

use std::collections::HashMap;

use crate::Entry;
use crate::MAX_NAME_BYTES;
use crate::search::Source;
use crate::text::{bounded_edit_distance, stem, words};

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
    /// Per entry, its names as suggestions compare them.
    suggestion_keys: Vec<SuggestionKeys>,
}

impl NameIndex {
    /// Indexes `entries` and the `(guest, configured)` server names; where `sources` says so,
    /// an entry's suggestion keys are those of an entry of `previous`, which was the same.
    pub(crate) fn build(
        namespaces: &[(String, String)],
        entries: &[Entry],
        sources: &[Source],
        previous: Option<&NameIndex>,
    ) -> Self {
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
        index.suggestion_keys = entries
            .iter()
            .enumerate()
            .map(|(position, entry)| {
                let reused = match (sources.get(position), previous) {
                    (Some(Source::Reuse(old)), Some(previous)) => {
                        previous.suggestion_keys.get(*old)
                    }
                    _ => None,
                };
                reused
                    .cloned()
                    .unwrap_or_else(|| SuggestionKeys::new(entry))
            })
            .collect();
        index
    }

    /// Up to three guest names (`server.tool`) of `entries` close to `name`, closest first.
    pub(crate) fn suggest(&self, entries: &[Entry], name: &str) -> Vec<String> {
        suggest(entries, &self.suggestion_keys, name)
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

/// A name prepared for comparison: lowercase with every separator as `_` (so `get-sum`,
/// `get.sum` and `Get_Sum` compare equal), as characters, and the stems of its words.
#[derive(Debug, Clone, Default)]
struct Comparable {
    text: String,
    characters: Vec<char>,
    stems: Vec<String>,
}

impl Comparable {
    fn new(name: &str) -> Self {
        let text: String = name
            .chars()
            .map(|c| {
                if c.is_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        let stems = words(&text).iter().map(|word| stem(word)).collect();
        Self {
            characters: text.chars().collect(),
            text,
            stems,
        }
    }
}

/// The names of one entry that a suggestion compares with, prepared once per catalog.
#[derive(Debug, Clone, Default)]
struct SuggestionKeys {
    guest_tool: Comparable,
    tool: Comparable,
    guest_server: Comparable,
    server: Comparable,
}

impl SuggestionKeys {
    fn new(entry: &Entry) -> Self {
        Self {
            guest_tool: Comparable::new(&entry.guest_tool),
            tool: Comparable::new(&entry.tool),
            guest_server: Comparable::new(&entry.guest_server),
            server: Comparable::new(&entry.server),
        }
    }
}

/// Up to three guest names (`server.tool`) close to `name`, closest first. A name longer than
/// [`MAX_NAME_BYTES`] names no tool and gets none.
fn suggest(entries: &[Entry], keys: &[SuggestionKeys], name: &str) -> Vec<String> {
    let name = name.trim();
    if name.len() > MAX_NAME_BYTES {
        return Vec::new();
    }
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
    let tool_part = Comparable::new(tool_part);
    if tool_part.text.is_empty() {
        return Vec::new();
    }
    let server_part = server_part.map(Comparable::new);
    let mut scored: Vec<(f64, String)> = Vec::new();
    for (entry, keys) in entries.iter().zip(keys) {
        let tool_similarity = similarity(&tool_part, &keys.guest_tool, MIN_SIMILARITY)
            .max(similarity(&tool_part, &keys.tool, MIN_SIMILARITY));
        if tool_similarity < MIN_SIMILARITY {
            continue;
        }
        let score = match &server_part {
            Some(server) => {
                let server_similarity = similarity(server, &keys.guest_server, 0.0)
                    .max(similarity(server, &keys.server, 0.0));
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

/// 0 (nothing alike) to 1 (equal): the best of spelling closeness, containment and shared
/// words. A similarity under `floor` may come out as any value under `floor`: the spelling is
/// measured only when it could decide the answer, and then only as far as it could.
fn similarity(query: &Comparable, candidate: &Comparable, floor: f64) -> f64 {
    if query.text == candidate.text {
        return 1.0;
    }
    let containment: f64 = if query.text.len() >= 3
        && (candidate.text.contains(&query.text) || query.text.contains(&candidate.text))
    {
        0.6
    } else {
        0.0
    };
    let shared = query
        .stems
        .iter()
        .filter(|word| candidate.stems.contains(word))
        .count();
    let all = query.stems.len() + candidate.stems.len() - shared;
    let overlap = if all == 0 {
        0.0
    } else {
        shared as f64 / all as f64
    };
    let known = containment.max(overlap);
    // Spelling counts only when it beats what is known and reaches the floor: at most this
    // many edits.
    let longest = query
        .characters
        .len()
        .max(candidate.characters.len())
        .max(1);
    let threshold = known.max(floor);
    let most_edits = ((1.0 - threshold) * longest as f64).floor() as usize;
    let distance = bounded_edit_distance(&query.characters, &candidate.characters, most_edits);
    let spelling = if distance <= most_edits {
        1.0 - distance as f64 / longest as f64
    } else {
        0.0
    };
    spelling.max(known)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The similarity measured in full: the spelling always, with no cutoff.
    fn exact_similarity(query: &Comparable, candidate: &Comparable) -> f64 {
        similarity(query, candidate, 0.0).max(if query.text == candidate.text {
            1.0
        } else {
            let longest = query
                .characters
                .len()
                .max(candidate.characters.len())
                .max(1);
            let distance = bounded_edit_distance(&query.characters, &candidate.characters, longest);
            1.0 - distance as f64 / longest as f64
        })
    }

    /// With a floor, a similarity at or over it is exact and one under it stays under it.
    #[test]
    fn the_cutoff_changes_nothing_that_counts() {
        let names = [
            "add",
            "ad",
            "get_sum",
            "getsum",
            "sum",
            "get-sum-of",
            "list_files",
            "files_list",
            "echo",
            "ehco",
            "remove",
            "demo",
            "fixture",
            "fixtures",
            "a",
            "",
            "x_y_z",
            "zzzzzz",
            "completely_unrelated",
            "add_numbers",
            "number_add",
        ];
        for query in names {
            for candidate in names {
                let (query, candidate) = (Comparable::new(query), Comparable::new(candidate));
                let exact = exact_similarity(&query, &candidate);
                let floored = similarity(&query, &candidate, MIN_SIMILARITY);
                if exact >= MIN_SIMILARITY {
                    assert_eq!(floored, exact, "{} {}", query.text, candidate.text);
                } else {
                    assert!(
                        floored < MIN_SIMILARITY,
                        "{} {}",
                        query.text,
                        candidate.text
                    );
                }
                assert_eq!(similarity(&query, &candidate, 0.0), exact);
            }
        }
    }
}
