//! Ranked search over the catalog: BM25F over weighted fields of every tool.
//!
//! Each tool is a document with fields (its name, title, server, parameter names, parameter
//! descriptions, description, output schema and its server's instructions), each with a weight
//! and its own length normalisation. The prose fields saturate as in BM25; a word in the tool's name or its
//! server's name adds a bonus beyond that, and a query that names a server puts that server's
//! matching tools first. Query words are stemmed and expanded with synonyms, related words (the
//! words people use for what tools call otherwise: `remember` → `observation`), prefixes and
//! near spellings at reduced weight, a query word scoring by its best expansion only. A hit that
//! has less than [`WEAK_MATCH`] of what the query's words weigh is weak. The index is built once
//! per catalog.

use std::collections::HashMap;

use serde_json::Value;

use crate::text::{edit_distance, is_stop_word, related, stem, synonyms, terms, words};
use crate::{Entry, ToolSchema};

/// Whether a tool's title or description says it is deprecated: a title with the word
/// (`Read File (Deprecated)`), a description that starts with it, writes `DEPRECATED` in
/// capitals, or says `this tool is deprecated`. A description that only calls one of its
/// parameters deprecated does not count.
pub(crate) fn says_deprecated(title: Option<&str>, description: Option<&str>) -> bool {
    let title = title.is_some_and(|title| {
        title
            .split(|c: char| !c.is_alphanumeric())
            .any(|word| word.eq_ignore_ascii_case("deprecated"))
    });
    let description = description.is_some_and(|description| {
        let lowered = description.trim_start().to_lowercase();
        lowered.starts_with("deprecated")
            || lowered.starts_with("[deprecated")
            || lowered.starts_with("(deprecated")
            || lowered.contains("this tool is deprecated")
            || description
                .split(|c: char| !c.is_alphanumeric())
                .any(|word| word == "DEPRECATED")
    });
    title || description
}

/// Hits a search returns when its caller does not say how many: the `search_tools` MCP tool,
/// `searchTools` in code and `toolweave tools` alike.
pub const DEFAULT_SEARCH_LIMIT: usize = 8;
/// BM25 saturation: how quickly repeated occurrences stop adding.
const K1: f64 = 1.2;
/// A hit that has less than this share of what the query's words weigh is a weak match: it
/// shares a word or two with the query, not what the query asks for.
const WEAK_MATCH: f64 = 0.35;
/// How much a query word that no tool has in any form weighs, as a share of a word only one
/// tool has.
const UNSEEN_FACTOR: f64 = 0.7;

/// The share of its score a tool whose description says it is deprecated keeps: it is still
/// found, after the tools that replace it.
const DEPRECATED_FACTOR: f64 = 0.5;
/// What a query word found in a tool's name adds, outside BM25's saturation (at most `K1 + 1`
/// for any number of mentions elsewhere), for a name of average length.
const NAME_BONUS: f64 = 2.0;
/// What a query word found in a tool's server's name adds: "query the postgres database" puts
/// postgres' tools first.
const SERVER_BONUS: f64 = 1.5;
/// How much more a tool of a server the query names counts ("select from a postgresql table"
/// puts postgres' tools before sqlite's, though sqlite's names say `table`).
const NAMED_SERVER_FACTOR: f64 = 2.0;
/// Where [`Field::Server`] is in [`Field::ALL`].
const SERVER_FIELD: usize = 2;
const _: () = assert!(matches!(Field::ALL[SERVER_FIELD], Field::Server));
/// How much a word of a server's instructions counts in each of its tools, against 1 for a
/// word of the tool's own description.
const INSTRUCTIONS_WEIGHT: f64 = 0.3;
/// How plainly a word of a server's instructions says what each of its tools is for (see
/// [`SearchIndex::says`]): less than a parameter's description, as it is said of them all; below
/// [`WEAK_MATCH`], so a tool found by its server's instructions alone is a weak match. At 0.25 the
/// search corpus lost a task from its top three (docs/benchmarks.md, Search).
const INSTRUCTIONS_SAY: f64 = 0.15;
/// Weight of a synonym match relative to the word itself.
const SYNONYM_FACTOR: f64 = 0.7;
/// Weight of a match on a word the query word is related to (`remember` → `observation`).
const RELATED_FACTOR: f64 = 0.6;
/// Weight of a match on a longer word the query word starts (`dir` → `directory`).
const PREFIX_FACTOR: f64 = 0.5;
/// Weight of a match on a word one edit away (`serch` → `search`).
const TYPO_FACTOR: f64 = 0.4;
/// How deep parameter names and descriptions are collected from an input schema.
const MAX_PARAMETER_DEPTH: usize = 4;
/// Parameter texts collected per tool, so a huge schema cannot bloat the index.
const MAX_PARAMETER_TEXTS: usize = 200;
/// The most words of a server's instructions search reads (their first ones): a server that
/// says a great deal about itself does not bloat the index of each of its tools.
pub const MAX_SEARCHED_INSTRUCTION_TERMS: usize = 1024;
/// Where [`Field::Instructions`] is in [`Field::ALL`].
const INSTRUCTIONS_FIELD: usize = 7;
const _: () = assert!(matches!(
    Field::ALL[INSTRUCTIONS_FIELD],
    Field::Instructions
));

/// A searchable part of a tool.
#[derive(Debug, Clone, Copy)]
enum Field {
    Name,
    Title,
    Server,
    Parameters,
    ParameterDescriptions,
    Description,
    /// Names and descriptions in the output schema: what a tool returns says what it is for.
    Output,
    /// What the tool's server says about itself (its `instructions`): what the server is for,
    /// said once for all of its tools.
    Instructions,
}

impl Field {
    const ALL: [Field; 8] = [
        Field::Name,
        Field::Title,
        Field::Server,
        Field::Parameters,
        Field::ParameterDescriptions,
        Field::Description,
        Field::Output,
        Field::Instructions,
    ];

    /// How much one occurrence counts: name > title > parameters > description > the server's
    /// instructions (for the name and the server's name, the bonus a match adds beyond the prose
    /// fields' saturation).
    fn weight(self) -> f64 {
        match self {
            Field::Name => NAME_BONUS,
            Field::Title => 2.5,
            Field::Server => SERVER_BONUS,
            Field::Parameters => 1.5,
            Field::ParameterDescriptions => 0.6,
            Field::Description => 1.0,
            Field::Output => 0.4,
            Field::Instructions => INSTRUCTIONS_WEIGHT,
        }
    }

    /// How plainly a word in this field says what the tool is for (see [`SearchIndex::says`]).
    fn says(self) -> f64 {
        match self {
            Field::Name | Field::Title | Field::Server => 1.0,
            Field::Parameters | Field::Description => 0.75,
            Field::ParameterDescriptions | Field::Output => 0.5,
            Field::Instructions => INSTRUCTIONS_SAY,
        }
    }

    /// Length normalisation: short name-like fields barely depend on length.
    fn length_normalization(self) -> f64 {
        match self {
            Field::Name | Field::Title => 0.3,
            Field::Server => 0.0,
            Field::Parameters => 0.5,
            Field::ParameterDescriptions
            | Field::Description
            | Field::Output
            | Field::Instructions => 0.75,
        }
    }
}

/// The inverted index of one catalog.
///
/// Postings keep each field's term count, not a finished frequency, and each document keeps
/// its fields' lengths: a catalog rebuilt after one server's change takes the postings of every
/// unchanged tool from the previous index (collecting a tool's terms is most of a build) and
/// only the length normalisation, which depends on every document, is redone at search time.
#[derive(Debug, Clone, Default)]
pub(crate) struct SearchIndex {
    /// Term → its id.
    term_ids: HashMap<String, usize>,
    /// Every term, sorted, for prefix and near-spelling lookups.
    vocabulary: Vec<String>,
    /// Per term id: the documents that have it, ascending, with its count in each field.
    postings: Vec<Vec<Posting>>,
    /// Per term id: inverse document frequency.
    inverse_frequency: Vec<f64>,
    /// Per document: each field's length in terms.
    lengths: Vec<FieldLengths>,
    /// Per field: the average length over every document (at least 1).
    average_lengths: [f64; FIELDS],
    /// Per document: names a query may spell exactly (`get_sum`, `get-sum`,
    /// `everything.get_sum`), lowercase, each followed by a line end (a name normalised holds
    /// none): one allocation per tool.
    exact_names: Vec<Box<str>>,
    /// Per document: whether its tool says it is deprecated.
    deprecated: Vec<bool>,
    documents: usize,
}

/// How many fields a document has.
const FIELDS: usize = Field::ALL.len();

/// A field's length per field, in [`Field::ALL`]'s order.
type FieldLengths = [u32; FIELDS];

/// A term's count per field, in [`Field::ALL`]'s order; 65,535 occurrences of one word in one
/// field count as that many (BM25 has long stopped adding by then).
type FieldCounts = [u16; FIELDS];

/// One document's occurrences of one term: 20 bytes, and there are hundreds of thousands.
#[derive(Debug, Clone, Copy)]
struct Posting {
    document: u32,
    counts: FieldCounts,
}

const _: () = assert!(std::mem::size_of::<Posting>() == 20);

/// One search hit: an index into the catalog's entries and its score.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Index into [`Catalog::entries`](crate::Catalog::entries).
    pub entry: usize,
    /// Relevance; higher is better. Only comparable within one search.
    pub score: f64,
    /// The tool matches only a small part of what the query could match at best (see
    /// [`WEAK_MATCH`]); never for an empty query or a tool's exact name.
    pub weak: bool,
}

/// What one document has of a query.
#[derive(Debug, Clone, Default)]
struct Match {
    /// Its score before the query's coverage, the server's naming and deprecation count.
    score: f64,
    /// The weight of the query words it has, each by the form it has and how plainly it says it.
    covered: f64,
    /// The query names its server.
    named: bool,
    /// The tool itself (not only its server's name) has a word of the query: a server named
    /// `everything` does not make "unstage everything" a query for its tools.
    said: bool,
}

/// Where a document of a new index takes its terms from.
pub(crate) enum Source {
    /// Collected from the entry.
    Collect,
    /// The same entry as this document of the previous index.
    Reuse(usize),
}

impl SearchIndex {
    /// Builds the index over `entries`, each with what its server says about itself in
    /// `instructions` (by configured name); where `sources` says so, a document's terms are
    /// those of a document of `previous`, whose entry and server's instructions were the same.
    pub(crate) fn build(
        entries: &[Entry],
        instructions: &HashMap<String, String>,
        sources: &[Source],
        previous: Option<&SearchIndex>,
    ) -> Self {
        let reused = previous.map(SearchIndex::terms_by_document);
        // Each server's instructions are read once, for all of its tools.
        let mut instruction_terms: HashMap<&str, Vec<String>> = HashMap::new();
        let mut index = SearchIndex {
            documents: entries.len(),
            ..Self::default()
        };
        for (document, entry) in entries.iter().enumerate() {
            let document_id = u32::try_from(document).unwrap_or(u32::MAX);
            let taken = match (sources.get(document), previous, &reused) {
                (Some(Source::Reuse(old)), Some(previous), Some(reused)) if *old < reused.len() => {
                    Some((previous, *old, &reused[*old]))
                }
                _ => None,
            };
            match taken {
                Some((previous, old, terms)) => {
                    for &(term, counts) in terms {
                        let id = index.term_id(term);
                        index.postings[id].push(Posting {
                            document: document_id,
                            counts,
                        });
                    }
                    index.lengths.push(previous.lengths[old]);
                    index.exact_names.push(previous.exact_names[old].clone());
                    index.deprecated.push(previous.deprecated[old]);
                }
                None => {
                    let server_terms = instruction_terms
                        .entry(entry.server.as_str())
                        .or_insert_with(|| {
                            instructions
                                .get(&entry.server)
                                .map(|text| {
                                    let mut terms = terms(text);
                                    terms.truncate(MAX_SEARCHED_INSTRUCTION_TERMS);
                                    terms
                                })
                                .unwrap_or_default()
                        });
                    index.collect(document_id, entry, server_terms);
                    index.exact_names.push(exact_names(entry));
                    index.deprecated.push(entry.deprecated());
                }
            }
        }
        let mut total_lengths = [0usize; FIELDS];
        for lengths in &index.lengths {
            for (total, length) in total_lengths.iter_mut().zip(lengths) {
                *total += *length as usize;
            }
        }
        for (average, total) in index.average_lengths.iter_mut().zip(total_lengths) {
            *average = (total as f64 / index.documents.max(1) as f64).max(1.0);
        }
        let documents = index.documents as f64;
        index.inverse_frequency = index
            .postings
            .iter()
            .map(|postings| {
                let frequency = document_frequency(postings, entries) as f64;
                (1.0 + (documents - frequency + 0.5) / (frequency + 0.5)).ln()
            })
            .collect();
        // Postings grew by doubling; what they will not use is handed back.
        for postings in &mut index.postings {
            postings.shrink_to_fit();
        }
        index.vocabulary = index.term_ids.keys().cloned().collect();
        index.vocabulary.sort_unstable();
        index
    }

    /// Collects the terms of `entry`, document `document`, into the postings, with
    /// `instructions`, the terms of what its server says about itself.
    fn collect(&mut self, document: u32, entry: &Entry, instructions: &[String]) {
        let schemas = Schemas::of(entry);
        let mut lengths: FieldLengths = [0; FIELDS];
        let mut counts: HashMap<String, FieldCounts> = HashMap::new();
        for (position, field) in Field::ALL.iter().enumerate() {
            let field_terms = match field {
                Field::Instructions => instructions.to_vec(),
                _ => field_terms(entry, &schemas, *field),
            };
            lengths[position] = u32::try_from(field_terms.len()).unwrap_or(u32::MAX);
            for term in field_terms {
                let count = &mut counts.entry(term).or_default()[position];
                *count = count.saturating_add(1);
            }
        }
        for (term, counts) in counts {
            let id = self.term_id(&term);
            self.postings[id].push(Posting { document, counts });
        }
        self.lengths.push(lengths);
    }

    /// Per document: its terms and their counts, from the postings.
    fn terms_by_document(&self) -> Vec<Vec<(&str, FieldCounts)>> {
        let mut by_id = vec![""; self.postings.len()];
        for (term, &id) in &self.term_ids {
            if let Some(slot) = by_id.get_mut(id) {
                *slot = term;
            }
        }
        let mut terms = vec![Vec::new(); self.documents];
        for (postings, term) in self.postings.iter().zip(by_id) {
            for posting in postings {
                if let Some(document) = terms.get_mut(posting.document as usize) {
                    document.push((term, posting.counts));
                }
            }
        }
        terms
    }

    /// What one occurrence pattern of a term in a document is worth, before the term's weight
    /// (its inverse document frequency and how close the query word is to it): the content
    /// fields' counts, weighted and length-normalised against the average (BM25F) and saturated,
    /// plus a bonus when the tool's name has it and one when its server's name has it. The name
    /// and the server stand outside the saturation: a word that names the tool or its server
    /// says more than any number of mentions in prose.
    fn frequency(&self, posting: &Posting) -> f64 {
        let lengths = &self.lengths[posting.document as usize];
        let mut content = 0.0;
        let mut bonus = 0.0;
        for (position, field) in Field::ALL.iter().enumerate() {
            let count = posting.counts[position];
            if count == 0 {
                continue;
            }
            let normalization = field.length_normalization();
            let relative_length = f64::from(lengths[position]) / self.average_lengths[position];
            let divisor = 1.0 - normalization + normalization * relative_length;
            match field {
                Field::Name | Field::Server => bonus += field.weight() / divisor,
                _ => content += field.weight() * f64::from(count) / divisor,
            }
        }
        content * (K1 + 1.0) / (content + K1) + bonus
    }

    /// How plainly a tool says a word it has: in its name, title or server's name, fully; in
    /// its parameters' names or its description, less; only in a parameter's description or its
    /// output schema, least ("sends an elicitation request" does not make a tool one that sends
    /// email).
    fn says(&self, posting: &Posting) -> f64 {
        Field::ALL
            .iter()
            .zip(posting.counts)
            .filter(|(_, count)| *count > 0)
            .map(|(field, _)| field.says())
            .fold(0.0, f64::max)
    }

    /// The id of `term`, given it one if it is new.
    fn term_id(&mut self, term: &str) -> usize {
        if let Some(&id) = self.term_ids.get(term) {
            return id;
        }
        let id = self.postings.len();
        self.term_ids.insert(term.to_owned(), id);
        self.postings.push(Vec::new());
        id
    }

    /// At most `limit` hits for `query`, best first, ties in catalog order; deprecated tools
    /// after those that match as well and are not. An empty query lists every tool in catalog
    /// order.
    pub(crate) fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let query_terms = query_terms(query);
        if query_terms.is_empty() {
            return (0..self.documents)
                .take(limit)
                .map(|entry| Hit {
                    entry,
                    score: 0.0,
                    weak: false,
                })
                .collect();
        }
        let values = value_terms(query);
        let total_weight: f64 = query_terms
            .iter()
            .map(|term| self.weight(term, values.contains(term)))
            .sum();
        let matches = self.matches(&query_terms);
        let normalized_query = normalize_name(query);
        let mut hits: Vec<Hit> = matches
            .iter()
            .enumerate()
            .filter(|(_, found)| found.score > 0.0)
            .map(|(document, found)| {
                // Tools that have more of what the query says come first among similar scores.
                let coverage = if total_weight > 0.0 {
                    found.covered / total_weight
                } else {
                    0.0
                };
                let relevance = found.score * (0.5 + 0.5 * coverage);
                let exact = self.exact_names[document]
                    .lines()
                    .any(|name| name == normalized_query);
                let mut score = relevance;
                if found.named && found.said {
                    score *= NAMED_SERVER_FACTOR;
                }
                if self.deprecated[document] {
                    score *= DEPRECATED_FACTOR;
                }
                if exact {
                    score += 1000.0;
                }
                Hit {
                    entry: document,
                    score,
                    weak: !exact && coverage < WEAK_MATCH,
                }
            })
            .collect();
        hits.sort_by(|left, right| {
            right
                .score
                .total_cmp(&left.score)
                .then(left.entry.cmp(&right.entry))
        });
        hits.truncate(limit);
        hits
    }

    /// What each document has of `query_terms`: each query word counts once per document, by
    /// its best expansion.
    fn matches(&self, query_terms: &[String]) -> Vec<Match> {
        let mut matches = vec![Match::default(); self.documents];
        for term in query_terms {
            let mut best: HashMap<usize, (f64, f64)> = HashMap::new();
            for (expansion, factor, names) in self.expansions(term) {
                let Some(&id) = self.term_ids.get(&expansion) else {
                    continue;
                };
                let inverse_frequency = self.inverse_frequency[id];
                for posting in &self.postings[id] {
                    let document = posting.document as usize;
                    let found = &mut matches[document];
                    found.named |= names && posting.counts[SERVER_FIELD] > 0;
                    found.said |= posting.counts.iter().enumerate().any(|(field, count)| {
                        field != SERVER_FIELD && field != INSTRUCTIONS_FIELD && *count > 0
                    });
                    let score = factor * inverse_frequency * self.frequency(posting);
                    let slot = best.entry(document).or_default();
                    if score > slot.0 {
                        *slot = (score, factor * inverse_frequency * self.says(posting));
                    }
                }
            }
            for (document, (score, weight)) in best {
                matches[document].score += score;
                matches[document].covered += weight;
            }
        }
        matches
    }

    /// How much a query word says: the inverse document frequency of its best form (the word
    /// itself, a synonym, a related word, a spelling), times how close that form is. A word that
    /// no tool has in any form (a name, a place, a number, or what no tool does) weighs as
    /// [`UNSEEN_FACTOR`] of a word only one tool has, unless it is written as a value (see
    /// [`value_terms`]): then it is what the tool is to work on, and weighs nothing.
    fn weight(&self, term: &str, value: bool) -> f64 {
        let best = self
            .expansions(term)
            .into_iter()
            .filter_map(|(expansion, factor, _)| {
                let id = self.term_ids.get(&expansion)?;
                Some(factor * self.inverse_frequency[*id])
            })
            .fold(0.0, f64::max);
        if best > 0.0 {
            best
        } else if value {
            0.0
        } else {
            UNSEEN_FACTOR * (1.0 + (self.documents as f64 - 0.5) / 1.5).ln()
        }
    }

    /// `term` itself, its synonyms, longer words it starts, and (when it is not a known word)
    /// known words one edit away, each with how much a match counts.
    /// The third of each is whether the expansion is a word the query may name a server by:
    /// the word itself, a synonym or a related word, not a spelling (`git` does not name
    /// `github`).
    fn expansions(&self, term: &str) -> Vec<(String, f64, bool)> {
        let mut expansions = vec![(term.to_owned(), 1.0, true)];
        for synonym in synonyms(term) {
            expansions.push((synonym, SYNONYM_FACTOR, true));
        }
        for word in related(term) {
            expansions.push((word, RELATED_FACTOR, true));
        }
        if term.chars().count() >= 3 {
            let start = self.vocabulary.partition_point(|word| word.as_str() < term);
            for word in self.vocabulary[start..]
                .iter()
                .take_while(|word| word.starts_with(term))
            {
                if word != term {
                    expansions.push((word.clone(), PREFIX_FACTOR, false));
                }
            }
        }
        if !self.term_ids.contains_key(term) && term.chars().count() >= 5 {
            for word in &self.vocabulary {
                if edit_distance(term, word, 1) == 1 {
                    expansions.push((word.clone(), TYPO_FACTOR, false));
                }
            }
        }
        expansions
    }
}

/// The query's stems, each once; stop words are dropped unless the query has nothing else.
fn query_terms(query: &str) -> Vec<String> {
    let mut query_terms = terms(query);
    if query_terms.is_empty() {
        query_terms = words(query).iter().map(|word| stem(word)).collect();
    }
    let mut seen = std::collections::HashSet::new();
    query_terms.retain(|term| seen.insert(term.clone()));
    query_terms
}

/// The terms of the query's words written as values rather than as what is asked for: a name
/// (a capitalised word that does not start the query: "remember that Alice works at Acme"), a
/// number, or a word with a dot or a slash inside (`config.yaml`, `example.com`, `src/main.rs`).
fn value_terms(query: &str) -> Vec<String> {
    let mut values = Vec::new();
    for (position, token) in query.split_whitespace().enumerate() {
        let token = token.trim_matches(|c: char| !c.is_alphanumeric());
        let name = position > 0 && token.chars().next().is_some_and(char::is_uppercase);
        let number = token.chars().any(|c| c.is_ascii_digit());
        let path = token.contains(['.', '/']);
        if name || number || path {
            values.extend(words(token).iter().map(|word| stem(word)));
        }
    }
    values
}

/// The texts of a tool's schemas, walked once while its terms are collected (the parameter
/// names and their descriptions are two fields of one walk).
struct Schemas {
    /// The input schema's property names.
    parameters: Vec<String>,
    /// The input schema's property descriptions.
    parameter_descriptions: Vec<String>,
    /// The output schema's property names and descriptions.
    output: Vec<String>,
}

impl Schemas {
    fn of(entry: &Entry) -> Self {
        let mut parameters = Vec::new();
        let mut parameter_descriptions = Vec::new();
        collect_parameters(
            &entry.input_schema.value(),
            0,
            &mut parameters,
            &mut parameter_descriptions,
        );
        let mut output = Vec::new();
        if let Some(schema) = entry.output_schema.as_ref().map(ToolSchema::value) {
            let mut descriptions = Vec::new();
            collect_parameters(&schema, 0, &mut output, &mut descriptions);
            output.append(&mut descriptions);
        }
        Self {
            parameters,
            parameter_descriptions,
            output,
        }
    }
}

/// The stems one field of a tool contributes.
fn field_terms(entry: &Entry, schemas: &Schemas, field: Field) -> Vec<String> {
    match field {
        // Names keep their stop words: `list_directory_with_sizes` is a name, not prose.
        Field::Name => name_terms(&entry.tool),
        Field::Title => entry.title.as_deref().map(terms).unwrap_or_default(),
        Field::Server => {
            let mut server = name_terms(&entry.server);
            if entry.guest_server != entry.server {
                for term in name_terms(&entry.guest_server) {
                    if !server.contains(&term) {
                        server.push(term);
                    }
                }
            }
            server
        }
        Field::Parameters => schemas
            .parameters
            .iter()
            .flat_map(|text| terms(text))
            .collect(),
        Field::ParameterDescriptions => schemas
            .parameter_descriptions
            .iter()
            .flat_map(|text| terms(text))
            .collect(),
        Field::Description => entry.description.as_deref().map(terms).unwrap_or_default(),
        Field::Output => schemas.output.iter().flat_map(|text| terms(text)).collect(),
        // Read once per server (see `SearchIndex::build`).
        Field::Instructions => Vec::new(),
    }
}

/// How many documents have a term, for its inverse document frequency: those whose tool has it,
/// and one per server that has it only in its instructions. A word a server says about itself
/// is said once, not once per tool: a server of fifty tools does not make its words common.
///
/// Postings are in document order and a server's tools are next to each other in the catalog,
/// so a server's postings come in one run.
fn document_frequency(postings: &[Posting], entries: &[Entry]) -> usize {
    let mut frequency = 0;
    let mut last_server: Option<&str> = None;
    for posting in postings {
        let tool_has_it = posting
            .counts
            .iter()
            .enumerate()
            .any(|(field, count)| field != INSTRUCTIONS_FIELD && *count > 0);
        let server = entries
            .get(posting.document as usize)
            .map(|entry| entry.server.as_str());
        if tool_has_it {
            frequency += 1;
        } else if server != last_server {
            frequency += 1;
            last_server = server;
        }
    }
    frequency
}

fn name_terms(name: &str) -> Vec<String> {
    words(name).iter().map(|word| stem(word)).collect()
}

/// Property names, and property descriptions with string enum values, of a schema.
fn collect_parameters(
    schema: &Value,
    depth: usize,
    names: &mut Vec<String>,
    descriptions: &mut Vec<String>,
) {
    if depth > MAX_PARAMETER_DEPTH || names.len() + descriptions.len() > MAX_PARAMETER_TEXTS {
        return;
    }
    let Value::Object(object) = schema else {
        return;
    };
    if let Some(Value::Object(properties)) = object.get("properties") {
        for (name, property) in properties {
            names.push(name.clone());
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                descriptions.push(description.to_owned());
            }
            if let Some(Value::Array(members)) = property.get("enum") {
                descriptions.extend(members.iter().filter_map(Value::as_str).map(str::to_owned));
            }
            collect_parameters(property, depth + 1, names, descriptions);
        }
    }
    for keyword in ["items", "additionalProperties"] {
        if let Some(inner) = object.get(keyword) {
            collect_parameters(inner, depth + 1, names, descriptions);
        }
    }
    for keyword in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(members)) = object.get(keyword) {
            for member in members {
                collect_parameters(member, depth + 1, names, descriptions);
            }
        }
    }
}

/// A name as a query might spell it: lowercase, separators unified to `_`, `tools.` dropped.
fn normalize_name(text: &str) -> String {
    let text = text.trim();
    let text = text.strip_prefix("tools.").unwrap_or(text);
    text.chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '.' {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

fn exact_names(entry: &Entry) -> Box<str> {
    let mut names = vec![
        normalize_name(&entry.tool),
        normalize_name(&entry.guest_tool),
        normalize_name(&format!("{}.{}", entry.guest_server, entry.guest_tool)),
        normalize_name(&format!("{}.{}", entry.server, entry.tool)),
    ];
    names.sort_unstable();
    names.dedup();
    names.retain(|name| !name.is_empty() && !is_stop_word(name));
    let mut joined = String::new();
    for name in names {
        joined.push_str(&name);
        joined.push('\n');
    }
    joined.into_boxed_str()
}
