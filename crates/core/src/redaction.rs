//! What reaches the model is the user's choice: secrets and personal data the settings'
//! `"redact"` names are replaced by tokens (`<email_1>`) in everything the model reads, and a
//! token code passes back in a tool's arguments is turned back into its value for the call.
//!
//! Guest code sees real values: a task moves an address from one tool to another without the
//! model reading it, and the model can still name it (`<email_1>`) in the code it writes next.
//! Each session keeps its own tokens ([`Tokens`], in its `SessionState`: a value gets the same
//! token every time within the session), and they never leave the gateway; the audit log counts
//! what was redacted by detector, never the values.
//!
//! Three places call in here, each once: the end of an execution (its value, warnings, error and
//! blocks, `Redaction::answer`) and each console line as it comes (`execution.rs`), the result of
//! a tool listed directly (`direct.rs`), and the arguments of every tool call (`bridge.rs`,
//! `restore`). What is found is the detectors' (`redaction/detectors.rs`).

mod detectors;

use std::collections::{BTreeMap, HashMap};
use std::sync::{LazyLock, Mutex, PoisonError};

use regex::Regex;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde::Serialize;
use serde_json::{Map, Value};
use toolweave_config::Detector;

pub use detectors::{Detected, detect};

use crate::error::ExecutionError;

/// The values a session keeps tokens for, in bytes; past it a value is still replaced, by a
/// token without a number that cannot be turned back (`<email>`).
const MAX_TOKEN_BYTES: usize = 16 * 1024 * 1024;
/// The tokens a session keeps at most, likewise.
const MAX_TOKENS: usize = 100_000;

/// A token as code passes it back: `<email_1>`.
static TOKEN: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let labels: Vec<&str> = Detector::ALL
        .iter()
        .map(|detector| detector.token_label())
        .collect();
    Regex::new(&format!("<({})_([0-9]{{1,12}})>", labels.join("|"))).ok()
});

/// The detectors a gateway redacts with (the settings' `"redact"`).
#[derive(Debug, Clone)]
pub struct Redaction {
    chosen: Vec<Detector>,
}

/// How many values each detector replaced (or, for arguments, how many tokens were turned
/// back), by the detector's name: what the audit log records.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Redacted(BTreeMap<&'static str, usize>);

impl Redacted {
    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The count of one detector.
    pub fn count(&self, detector: Detector) -> usize {
        self.0.get(detector.as_str()).copied().unwrap_or(0)
    }

    fn add(&mut self, detector: Detector) {
        *self.0.entry(detector.as_str()).or_insert(0) += 1;
    }

    /// Adds `other`'s counts to these.
    pub(crate) fn merge(&mut self, other: Redacted) {
        for (name, count) in other.0 {
            *self.0.entry(name).or_insert(0) += count;
        }
    }
}

/// The tokens of one session: each value replaced, and its token. Kept by the session's state
/// (a request without a session has its own for the one execution or direct call).
#[derive(Debug, Default)]
pub struct Tokens {
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    by_value: HashMap<(Detector, String), u64>,
    by_token: HashMap<(Detector, u64), String>,
    /// The last number given, by detector.
    last: BTreeMap<Detector, u64>,
    bytes: usize,
}

impl Tokens {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether no token was given yet.
    pub(crate) fn is_empty(&self) -> bool {
        self.table().by_token.is_empty()
    }

    /// The token of `value` found by `detector`: the one it got before in this session, else a
    /// new one (`<email_3>`), or, once the session keeps as many as it may, `<email>`.
    fn token(&self, detector: Detector, value: &str) -> String {
        let label = detector.token_label();
        let mut table = self.table();
        let key = (detector, value.to_owned());
        if let Some(number) = table.by_value.get(&key) {
            return format!("<{label}_{number}>");
        }
        if table.by_token.len() >= MAX_TOKENS || table.bytes + value.len() > MAX_TOKEN_BYTES {
            return format!("<{label}>");
        }
        let number = {
            let last = table.last.entry(detector).or_insert(0);
            *last += 1;
            *last
        };
        table.bytes += value.len();
        table.by_token.insert((detector, number), value.to_owned());
        table.by_value.insert(key, number);
        format!("<{label}_{number}>")
    }

    /// The value a token (`email`, `3`) stands for in this session.
    fn value(&self, label: &str, number: &str) -> Option<(Detector, String)> {
        let detector = Detector::ALL
            .into_iter()
            .find(|detector| detector.token_label() == label)?;
        let number: u64 = number.parse().ok()?;
        self.table()
            .by_token
            .get(&(detector, number))
            .map(|value| (detector, value.clone()))
    }
}

impl Redaction {
    /// Redaction with `chosen`'s detectors; `None` when there are none.
    pub fn new(chosen: &[Detector]) -> Option<Self> {
        if chosen.is_empty() {
            return None;
        }
        detectors::prepare();
        let mut chosen = chosen.to_vec();
        chosen.sort();
        chosen.dedup();
        Some(Self { chosen })
    }

    /// The detectors it redacts with.
    pub fn detectors(&self) -> &[Detector] {
        &self.chosen
    }

    /// Replaces what the detectors find in `text` by its token of `tokens` (by a token without
    /// a number with none: the audit log's contents), counting each in `counts`.
    pub(crate) fn text(&self, tokens: Option<&Tokens>, text: &mut String, counts: &mut Redacted) {
        let found = detect(text, &self.chosen);
        if found.is_empty() {
            return;
        }
        let mut redacted = String::with_capacity(text.len());
        let mut at = 0;
        for detected in found {
            redacted.push_str(&text[at..detected.start]);
            let value = &text[detected.start..detected.end];
            redacted.push_str(&replacement(tokens, detected.detector, value));
            counts.add(detected.detector);
            at = detected.end;
        }
        redacted.push_str(&text[at..]);
        *text = redacted;
    }

    /// Replaces what the detectors find in every string and key of `value`, and, with
    /// `secrets`, the whole of a string under a credential's key (`"password"`) that looks
    /// generated.
    pub(crate) fn value(&self, tokens: Option<&Tokens>, value: &mut Value, counts: &mut Redacted) {
        match value {
            Value::String(text) => self.text(tokens, text, counts),
            Value::Array(items) => {
                for item in items {
                    self.value(tokens, item, counts);
                }
            }
            Value::Object(members) => self.members(tokens, members, counts),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn members(
        &self,
        tokens: Option<&Tokens>,
        members: &mut Map<String, Value>,
        counts: &mut Redacted,
    ) {
        let secrets = self.chosen.contains(&Detector::Secrets);
        let mut keys_found = false;
        for (key, member) in members.iter_mut() {
            match member {
                Value::String(text)
                    if secrets
                        && detectors::credential_key(key)
                        && detectors::high_entropy(text)
                        && detect(text, &self.chosen).is_empty() =>
                {
                    *text = replacement(tokens, Detector::Secrets, text);
                    counts.add(Detector::Secrets);
                }
                member => self.value(tokens, member, counts),
            }
            keys_found |= !detect(key, &self.chosen).is_empty();
        }
        if keys_found {
            // An object keyed by addresses: its keys are replaced in place, in order.
            *members = std::mem::take(members)
                .into_iter()
                .map(|(mut key, member)| {
                    self.text(tokens, &mut key, counts);
                    (key, member)
                })
                .collect();
        }
    }

    /// Redacts what an execution's answer says: its value (or its error), its warnings and the
    /// blocks it emitted. Its console lines were redacted as they came.
    pub(crate) fn answer(
        &self,
        tokens: &Tokens,
        result: &mut Result<Value, ExecutionError>,
        warnings: &mut [String],
        blocks: &mut [ContentBlock],
    ) -> Redacted {
        let mut counts = Redacted::default();
        match result {
            Ok(value) => self.value(Some(tokens), value, &mut counts),
            Err(error) => {
                for text in error.texts_mut() {
                    self.text(Some(tokens), text, &mut counts);
                }
            }
        }
        for warning in warnings {
            self.text(Some(tokens), warning, &mut counts);
        }
        for block in blocks {
            self.block(tokens, block, &mut counts);
        }
        counts
    }

    /// Redacts the result of a tool listed directly: its content and its structured content.
    pub(crate) fn tool_result(&self, tokens: &Tokens, result: &mut CallToolResult) -> Redacted {
        let mut counts = Redacted::default();
        for block in &mut result.content {
            self.block(tokens, block, &mut counts);
        }
        if let Some(structured) = &mut result.structured_content {
            self.value(Some(tokens), structured, &mut counts);
        }
        counts
    }

    /// Redacts the text of a content block (a text, or an embedded text resource); pictures,
    /// sound and links are left as they are.
    fn block(&self, tokens: &Tokens, block: &mut ContentBlock, counts: &mut Redacted) {
        match block {
            ContentBlock::Text(text) => self.text(Some(tokens), &mut text.text, counts),
            ContentBlock::Resource(resource) => {
                if let ResourceContents::TextResourceContents { text, .. } = &mut resource.resource
                {
                    self.text(Some(tokens), text, counts);
                }
            }
            // Pictures, sound, links to resources, and whatever a later MCP adds.
            _ => {}
        }
    }
}

/// The token that replaces `value`: numbered from `tokens`, or without a number.
fn replacement(tokens: Option<&Tokens>, detector: Detector, value: &str) -> String {
    match tokens {
        Some(tokens) => tokens.token(detector, value),
        None => format!("<{}>", detector.token_label()),
    }
}

/// Turns the tokens of this session in a tool's arguments (whole strings or inside them, keys
/// too) back into their values for the upstream call; a token the session did not give is left
/// as it is. The count, by detector, is for the audit log.
pub(crate) fn restore(tokens: &Tokens, arguments: &mut Value) -> Redacted {
    let mut counts = Redacted::default();
    if !tokens.is_empty() {
        restore_value(tokens, arguments, &mut counts);
    }
    counts
}

fn restore_value(tokens: &Tokens, value: &mut Value, counts: &mut Redacted) {
    match value {
        Value::String(text) => restore_text(tokens, text, counts),
        Value::Array(items) => {
            for item in items {
                restore_value(tokens, item, counts);
            }
        }
        Value::Object(members) => {
            let keyed = members.keys().any(|key| key.contains('<'));
            if keyed {
                *members = std::mem::take(members)
                    .into_iter()
                    .map(|(mut key, member)| {
                        restore_text(tokens, &mut key, counts);
                        (key, member)
                    })
                    .collect();
            }
            for member in members.values_mut() {
                restore_value(tokens, member, counts);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn restore_text(tokens: &Tokens, text: &mut String, counts: &mut Redacted) {
    if !text.contains('<') {
        return;
    }
    let Some(pattern) = TOKEN.as_ref() else {
        return;
    };
    let mut restored = String::with_capacity(text.len());
    let mut at = 0;
    for captures in pattern.captures_iter(text) {
        let (Some(whole), Some(label), Some(number)) =
            (captures.get(0), captures.get(1), captures.get(2))
        else {
            continue;
        };
        if let Some((detector, value)) = tokens.value(label.as_str(), number.as_str()) {
            restored.push_str(&text[at..whole.start()]);
            restored.push_str(&value);
            counts.add(detector);
            at = whole.end();
        }
    }
    if at > 0 {
        restored.push_str(&text[at..]);
        *text = restored;
    }
}

/// The corpus and its precision and recall, kept beside the corpus in `tests/redaction/`.
#[cfg(test)]
#[path = "../tests/redaction/corpus.rs"]
mod corpus;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn every() -> Redaction {
        Redaction::new(&Detector::ALL).unwrap()
    }

    #[test]
    fn the_same_value_gets_the_same_token_and_comes_back() {
        let redaction = every();
        let tokens = Tokens::default();
        let mut counts = Redacted::default();
        let mut value = json!({
            "to": "ann@example.org",
            "cc": ["bob@example.org", "ann@example.org"],
            "note": "write to ann@example.org or call +44 20 7946 0958",
            "apiKey": "Zq8vN2xR7pLw4Ks9",
            "ann@example.org": 1,
        });
        redaction.value(Some(&tokens), &mut value, &mut counts);
        assert_eq!(
            value,
            json!({
                "to": "<email_1>",
                "cc": ["<email_2>", "<email_1>"],
                "note": "write to <email_1> or call <phone_1>",
                "apiKey": "<secret_1>",
                "<email_1>": 1,
            })
        );
        assert_eq!(counts.count(Detector::Email), 5);
        assert_eq!(counts.count(Detector::Secrets), 1);
        let mut arguments = json!({"to": "<email_1>", "body": "from <email_2>, not <email_9>"});
        let restored = restore(&tokens, &mut arguments);
        assert_eq!(
            arguments,
            json!({"to": "ann@example.org", "body": "from bob@example.org, not <email_9>"})
        );
        assert_eq!(restored.count(Detector::Email), 2);
        // Another session's tokens mean nothing here.
        let mut elsewhere = json!("<email_1>");
        assert!(restore(&Tokens::default(), &mut elsewhere).is_empty());
        assert_eq!(elsewhere, json!("<email_1>"));
    }

    #[test]
    fn without_tokens_values_are_masked() {
        let mut value = json!({"text": "ann@example.org"});
        every().value(None, &mut value, &mut Redacted::default());
        assert_eq!(value, json!({"text": "<email>"}));
    }

    /// What redacting costs, printed: a small answer with an address and a phone number, one
    /// without anything to find, and 1.2 MB of log lines with an address in every tenth
    /// (`cargo test -p toolweave-core --lib measure_redaction -- --ignored --nocapture`).
    #[test]
    #[ignore = "a measurement, not a check"]
    fn measure_redaction() {
        let redaction = every();
        let lines: String = (0..20_000)
            .map(|line| {
                if line % 10 == 0 {
                    format!("2025-05-02 10:41:07 INFO mail sent to user{line}@example.org\n")
                } else {
                    format!("2025-05-02 10:41:07 INFO request {line} took 12 ms, status 200\n")
                }
            })
            .collect();
        for (name, value) in [
            (
                "small, with an address and a phone number",
                json!({"to": "ann@example.org", "note": "call +44 20 7946 0958", "id": 17}),
            ),
            (
                "small, nothing to find",
                json!({"sum": "7", "ok": true, "items": ["a", "b"]}),
            ),
            ("1.2 MB of log lines", json!(lines)),
        ] {
            let mut times = Vec::new();
            for _ in 0..31 {
                let mut copy = value.clone();
                let tokens = Tokens::default();
                let started = std::time::Instant::now();
                redaction.value(Some(&tokens), &mut copy, &mut Redacted::default());
                times.push(started.elapsed());
            }
            times.sort();
            println!("{name}: {:?} (median of 31)", times[15]);
        }
    }

    #[test]
    fn only_chosen_detectors_redact() {
        let redaction = Redaction::new(&[Detector::Phone]).unwrap();
        let mut text = "ann@example.org, (415) 555-0132".to_owned();
        redaction.text(
            Some(&Tokens::default()),
            &mut text,
            &mut Redacted::default(),
        );
        assert_eq!(text, "ann@example.org, <phone_1>");
        assert!(Redaction::new(&[]).is_none());
    }
}
