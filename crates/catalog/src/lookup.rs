//! Finding a tool by the name guest code or a model wrote: exact forms, then suggestions.

use std::cmp::Ordering;
use std::collections::HashMap;

use crate::Entry;
use crate::MAX_NAME_BYTES;
use crate::search::Source;
use crate::text::{bounded_edit_distance, stem, words};

/// How many suggestions an unknown name gets at most.
const MAX_SUGGESTIONS: usize = 3;
/// How similar (0 to 1) a name must be to be suggested.
const MIN_SIMILARITY: f64 = 0.5;

/// Name tables of one catalog. The tables of tool names hold positions of the catalog's
/// entries, sorted by the names they are looked up by: the names themselves stay in the entries
/// (what copies would cost: docs/benchmarks.md, "Figures behind choices in the code").
#[derive(Debug, Clone, Default)]
pub(crate) struct NameIndex {
    /// Entries by (guest server, guest tool).
    by_guest: Vec<u32>,
    /// Entries by (configured server, upstream tool).
    by_original: Vec<u32>,
    /// Guest server name → configured name.
    server_by_guest: HashMap<String, String>,
    /// Configured server name → guest name.
    server_by_original: HashMap<String, String>,
    /// Per entry, its tool's names as suggestions compare them (the server's are prepared when
    /// a suggestion is asked for: one per server, not one per tool).
    suggestion_keys: Vec<SuggestionKeys>,
}

/// Which names of an entry a table of [`NameIndex`] looks it up by.
#[derive(Debug, Clone, Copy)]
enum Names {
    Guest,
    Original,
}

impl Names {
    fn of(self, entry: &Entry) -> (&str, &str) {
        match self {
            Self::Guest => (&entry.guest_server, &entry.guest_tool),
            Self::Original => (&entry.server, &entry.tool),
        }
    }

    /// The positions of `entries` sorted by these names. No two entries have the same names:
    /// the catalog gives each server's tools distinct guest names and drops a second tool of
    /// the same upstream name.
    fn table(self, entries: &[Entry]) -> Vec<u32> {
        let mut table: Vec<u32> = (0..entries.len())
            .filter_map(|position| u32::try_from(position).ok())
            .collect();
        table.sort_unstable_by(|&left, &right| {
            self.of(&entries[left as usize])
                .cmp(&self.of(&entries[right as usize]))
        });
        table
    }

    /// The entry of `table` with these names.
    fn find(self, table: &[u32], entries: &[Entry], server: &str, tool: &str) -> Option<usize> {
        let found = table
            .binary_search_by(|&position| {
                entries
                    .get(position as usize)
                    .map_or(Ordering::Less, |entry| self.of(entry).cmp(&(server, tool)))
            })
            .ok()?;
        Some(table[found] as usize)
    }
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
        index.by_guest = Names::Guest.table(entries);
        index.by_original = Names::Original.table(entries);
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

    /// The entry of `entries` (those this index was built over) that `name` refers to:
    /// `server.tool` (guest names), `tools.server.tool`, `mcp__server__tool` (original names), or
    /// original names with a dot when only one tool fits.
    pub(crate) fn resolve(&self, entries: &[Entry], name: &str) -> Option<usize> {
        let name = name.trim();
        if let Some(found) = self.dotted(entries, name) {
            return Some(found);
        }
        if let Some(found) = name
            .strip_prefix("tools.")
            .and_then(|rest| self.dotted(entries, rest))
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
            if let Some(found) = self.original(entries, server, tool) {
                return Some(found);
            }
        }
        unique(
            splits
                .iter()
                .flat_map(|(server, tool)| self.candidates(entries, server, tool)),
        )
    }

    /// `server.tool`: guest names first, then any split at a dot that names exactly one tool.
    fn dotted(&self, entries: &[Entry], name: &str) -> Option<usize> {
        if let Some((server, tool)) = name.split_once('.')
            && let Some(found) = self.guest(entries, server, tool)
        {
            return Some(found);
        }
        unique(
            name.match_indices('.')
                .flat_map(|(at, _)| self.candidates(entries, &name[..at], &name[at + 1..])),
        )
    }

    /// The entry with these guest names.
    fn guest(&self, entries: &[Entry], server: &str, tool: &str) -> Option<usize> {
        Names::Guest.find(&self.by_guest, entries, server, tool)
    }

    /// The entry with these configured server and upstream tool names.
    fn original(&self, entries: &[Entry], server: &str, tool: &str) -> Option<usize> {
        Names::Original.find(&self.by_original, entries, server, tool)
    }

    /// Entries that `server` and `tool` name, each spelled the guest or the original way.
    fn candidates(&self, entries: &[Entry], server: &str, tool: &str) -> Vec<usize> {
        let mut found = Vec::new();
        let guest_server = self.server_by_original.get(server).map(String::as_str);
        let original_server = self.server_by_guest.get(server).map(String::as_str);
        let lookups = [
            self.guest(entries, server, tool),
            self.original(entries, server, tool),
            original_server.and_then(|server| self.original(entries, server, tool)),
            guest_server.and_then(|server| self.guest(entries, server, tool)),
        ];
        for entry in lookups.into_iter().flatten() {
            if !found.contains(&entry) {
                found.push(entry);
            }
        }
        found
    }
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
/// `get.sum` and `Get_Sum` compare equal), and the stems of its words. Two allocations: there
/// is one per tool, and a catalog can hold ten thousand.
#[derive(Debug, Clone, Default, PartialEq)]
struct Comparable {
    text: Box<str>,
    /// The stems of its words, each followed by a space (words hold no space).
    stems: Box<str>,
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
        let mut stems = String::new();
        for word in words(&text) {
            stems.push_str(&stem(&word));
            stems.push(' ');
        }
        Self {
            text: text.into_boxed_str(),
            stems: stems.into_boxed_str(),
        }
    }

    fn stems(&self) -> impl Iterator<Item = &str> {
        self.stems.split_terminator(' ')
    }
}

/// The names of one entry's tool that a suggestion compares with, prepared once per catalog.
#[derive(Debug, Clone, Default)]
struct SuggestionKeys {
    guest_tool: Comparable,
    /// The upstream tool name, when it compares differently from the guest name (most tools'
    /// two names compare alike).
    tool: Option<Comparable>,
}

impl SuggestionKeys {
    fn new(entry: &Entry) -> Self {
        let guest_tool = Comparable::new(&entry.guest_tool);
        let tool = Some(Comparable::new(&entry.tool)).filter(|tool| *tool != guest_tool);
        Self { guest_tool, tool }
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
    // Each server's similarity to the server part, worked out once per server.
    let mut servers: HashMap<(&str, &str), f64> = HashMap::new();
    let mut scored: Vec<(f64, String)> = Vec::new();
    for (entry, keys) in entries.iter().zip(keys) {
        let mut tool_similarity = similarity(&tool_part, &keys.guest_tool, MIN_SIMILARITY);
        if let Some(tool) = &keys.tool {
            tool_similarity = tool_similarity.max(similarity(&tool_part, tool, MIN_SIMILARITY));
        }
        if tool_similarity < MIN_SIMILARITY {
            continue;
        }
        let score = match &server_part {
            Some(server) => {
                let server_similarity = *servers
                    .entry((&entry.guest_server, &entry.server))
                    .or_insert_with(|| {
                        similarity(server, &Comparable::new(&entry.guest_server), 0.0)
                            .max(similarity(server, &Comparable::new(&entry.server), 0.0))
                    });
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
        && (candidate.text.contains(&*query.text) || query.text.contains(&*candidate.text))
    {
        0.6
    } else {
        0.0
    };
    let shared = query
        .stems()
        .filter(|word| candidate.stems().any(|other| other == *word))
        .count();
    let all = query.stems().count() + candidate.stems().count() - shared;
    let overlap = if all == 0 {
        0.0
    } else {
        shared as f64 / all as f64
    };
    let known = containment.max(overlap);
    spelling(&query.text, &candidate.text, known.max(floor)).max(known)
}

/// How alike two texts are spelled, 0 to 1 (one minus the edits over the longer length), when
/// that is at least `threshold`; 0 otherwise, found without measuring past it.
fn spelling(left: &str, right: &str, threshold: f64) -> f64 {
    if left.is_ascii() && right.is_ascii() {
        spelling_of(left.as_bytes(), right.as_bytes(), threshold)
    } else {
        let left: Vec<char> = left.chars().collect();
        let right: Vec<char> = right.chars().collect();
        spelling_of(&left, &right, threshold)
    }
}

fn spelling_of<T: PartialEq>(left: &[T], right: &[T], threshold: f64) -> f64 {
    let longest = left.len().max(right.len()).max(1);
    // At most this many edits reach the threshold.
    let most_edits = ((1.0 - threshold) * longest as f64).floor() as usize;
    let distance = bounded_edit_distance(left, right, most_edits);
    if distance <= most_edits {
        1.0 - distance as f64 / longest as f64
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The similarity measured in full: the spelling always, with no cutoff.
    fn exact_similarity(query: &Comparable, candidate: &Comparable) -> f64 {
        similarity(query, candidate, 0.0).max(if query.text == candidate.text {
            1.0
        } else {
            spelling(&query.text, &candidate.text, 0.0)
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
