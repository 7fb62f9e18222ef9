//! Precision and recall of each detector over `corpus.json`: tool results as servers send them
//! (files, API answers, logs, exports) with secrets and personal data planted, and look-alikes
//! that must not match (UUIDs, commit and content hashes, versions, ordinary numbers, dates, IP
//! addresses, order numbers, card- and IBAN-shaped codes that fail their checks).
//!
//! Each case lists what it plants; whatever else a detector finds is a false positive. Run with
//! `cargo test -p toolweave-core --lib corpus -- --nocapture` to print the table
//! `docs/benchmarks.md` shows. (Compiled into the crate's unit tests by `redaction.rs`, since
//! the detectors are the crate's own.)

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use toolweave_config::Detector;

use crate::redaction::detect;

#[derive(Deserialize)]
struct Case {
    source: String,
    text: String,
    planted: Vec<Planted>,
}

#[derive(Deserialize)]
struct Planted {
    detector: Detector,
    value: String,
}

/// What one detector found right, found wrongly, and missed.
#[derive(Default, Debug)]
struct Score {
    true_positives: usize,
    false_positives: usize,
    false_negatives: usize,
}

impl Score {
    fn precision(&self) -> f64 {
        ratio(
            self.true_positives,
            self.true_positives + self.false_positives,
        )
    }

    fn recall(&self) -> f64 {
        ratio(
            self.true_positives,
            self.true_positives + self.false_negatives,
        )
    }
}

fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        1.0
    } else {
        #[expect(clippy::cast_precision_loss, reason = "counts of a few hundred")]
        let ratio = part as f64 / whole as f64;
        ratio
    }
}

fn corpus() -> Vec<Case> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/redaction/corpus.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn corpus_precision_and_recall_per_detector() {
    let cases = corpus();
    let mut scores: BTreeMap<Detector, Score> = Detector::ALL
        .into_iter()
        .map(|detector| (detector, Score::default()))
        .collect();
    let mut wrong = Vec::new();
    let look_alikes = cases.iter().filter(|case| case.planted.is_empty()).count();
    for case in &cases {
        let planted: BTreeSet<(Detector, &str)> = case
            .planted
            .iter()
            .map(|planted| (planted.detector, planted.value.as_str()))
            .collect();
        let found: BTreeSet<(Detector, &str)> = detect(&case.text, &Detector::ALL)
            .into_iter()
            .map(|detected| (detected.detector, &case.text[detected.start..detected.end]))
            .collect();
        for hit in &found {
            let score = scores.entry(hit.0).or_default();
            if planted.contains(hit) {
                score.true_positives += 1;
            } else {
                score.false_positives += 1;
                wrong.push(format!("{}: found {} {:?}", case.source, hit.0, hit.1));
            }
        }
        for missed in planted.difference(&found) {
            scores.entry(missed.0).or_default().false_negatives += 1;
            wrong.push(format!(
                "{}: missed {} {:?}",
                case.source, missed.0, missed.1
            ));
        }
    }
    println!(
        "{} tool results ({look_alikes} holding only look-alikes)",
        cases.len()
    );
    println!("| detector | planted | found right | found wrongly | missed | precision | recall |");
    println!("|---|---|---|---|---|---|---|");
    for (detector, score) in &scores {
        println!(
            "| {detector} | {} | {} | {} | {} | {:.0}% | {:.0}% |",
            score.true_positives + score.false_negatives,
            score.true_positives,
            score.false_positives,
            score.false_negatives,
            score.precision() * 100.0,
            score.recall() * 100.0
        );
    }
    for line in &wrong {
        println!("{line}");
    }
    for (detector, score) in &scores {
        assert!(
            score.true_positives + score.false_negatives >= 3,
            "{detector}: the corpus plants too few to measure"
        );
        assert!(
            score.precision() >= 0.9,
            "{detector}: precision {:.2}\n{}",
            score.precision(),
            wrong.join("\n")
        );
        assert!(
            score.recall() >= 0.9,
            "{detector}: recall {:.2}\n{}",
            score.recall(),
            wrong.join("\n")
        );
    }
    assert!(look_alikes >= 20, "the corpus has too few look-alikes");
}
