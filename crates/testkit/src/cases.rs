//! Guest programs as files, each with its expected outcome written in it, in comments (`//` in
//! JavaScript and TypeScript, `#` in Python):
//!
//! - `expect: <JSON>`: the result, compared as a whole;
//! - `expect-error: <kind>`: the execution fails with this kind (`Timeout`, `GuestError`, ...);
//! - `expect-message: <text>`: the answer's text contains this (repeatable);
//! - `expect-no-message: <text>`: the answer's text does not contain this (repeatable);
//! - `expect-logs: <JSON array>`: the console lines of the answer's text (`[warn] ` and so on
//!   before those not written with `log`), compared as a whole;
//! - `expect-blocks: <JSON array>`: the content blocks after the answer's text, each as
//!   `harness::block_summary` writes it (`"image image/png 68"`); none when the marker is left
//!   out;
//! - `pending: <why>`: the case is known not to pass yet. Its failure is reported, loudly, but
//!   does not fail the suite; once it passes, the suite fails until the marker is removed;
//! - `also-while-starting`: the case runs a second time on a gateway whose servers are still
//!   starting when it begins, and must meet the same expectations: what code is told about a
//!   name may not depend on whether its server is up yet.
//!
//! Used by the guest cases (`tests/cases/`) and the hostile corpus (`tests/hostile/`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::harness::Execution;

/// Limits the case files are written against: the gateway runs them with these flags. A call
/// that needs approval is refused rather than left waiting at the approval page.
pub const CASE_LIMITS: &[&str] = &[
    "--approval",
    "elicitation",
    "--timeout-ms",
    "1500",
    "--memory-mb",
    "32",
    "--max-log-bytes",
    "65536",
    "--max-result-bytes",
    "1048576",
    "--max-tool-calls",
    "50",
];

/// One case file: its program, language and what it must come to.
#[derive(Debug, Clone)]
pub struct Case {
    /// The file, for messages.
    pub path: PathBuf,
    /// The program.
    pub code: String,
    /// `javascript`, `typescript` or `python`, from the file's extension.
    pub language: &'static str,
    /// What the execution must come to.
    pub expected: Expectation,
}

/// What a case's execution must come to.
#[derive(Debug, Clone, Default)]
pub struct Expectation {
    /// The result, compared as a whole.
    pub value: Option<Value>,
    /// The error kind of a failed execution.
    pub error_kind: Option<String>,
    /// Texts the answer must contain.
    pub messages: Vec<String>,
    /// Texts the answer must not contain.
    pub absent: Vec<String>,
    /// The console lines, compared as a whole.
    pub logs: Option<Value>,
    /// The content blocks after the text, each as `harness::block_summary` writes it.
    pub blocks: Option<Value>,
    /// Why the case is known not to pass yet.
    pub pending: Option<String>,
    /// Whether the case also runs while the servers start.
    pub while_starting: bool,
}

impl Case {
    /// Reads `path` and the expectation written in it.
    pub fn read(path: &Path) -> Result<Self> {
        Self::read_with(path, &[])
    }

    /// Reads `path` as [`read`](Self::read) does, with each `{{NAME}}` of `variables` written
    /// as its value in the program and its expectations alike: what the test made for it (a
    /// folder, an address, a commit's id). With variables, a `{{NAME}}` left over is an error.
    pub fn read_with(path: &Path, variables: &[(&str, String)]) -> Result<Self> {
        let mut code =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        for (name, value) in variables {
            code = code.replace(&format!("{{{{{name}}}}}"), value);
        }
        if !variables.is_empty()
            && let Some(start) = code.find("{{")
        {
            let rest = &code[start..];
            let end = rest.find("}}").map_or(rest.len(), |end| end + 2);
            bail!(
                "{}: {} is not one of the variables this test gives ({})",
                path.display(),
                &rest[..end],
                variables
                    .iter()
                    .map(|(name, _)| format!("{{{{{name}}}}}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let (language, marker) = match path.extension().and_then(|e| e.to_str()) {
            Some("py") => ("python", "#"),
            Some("ts") => ("typescript", "//"),
            Some("js") => ("javascript", "//"),
            _ => bail!("{}: a case is a .js, .ts or .py file", path.display()),
        };
        let expected = expectation(path, &code, marker)?;
        Ok(Self {
            path: path.to_owned(),
            code,
            language,
            expected,
        })
    }

    /// What is wrong with `execution` against this case's expectation; empty when nothing is.
    pub fn problems(&self, execution: &Execution) -> Vec<String> {
        let expected = &self.expected;
        let mut problems = Vec::new();
        if let Some(value) = &expected.value {
            if execution.is_error {
                problems.push(format!("failed: {}", execution.text));
            } else if &execution.structured["result"] != value {
                problems.push(format!(
                    "result {} != expected {value}",
                    execution.structured["result"]
                ));
            }
        }
        if let Some(kind) = &expected.error_kind {
            if !execution.is_error {
                problems.push(format!(
                    "succeeded with {}, expected {kind}",
                    execution.text
                ));
            } else if execution.error_kind() != Some(kind.as_str()) {
                problems.push(format!(
                    "error kind {:?} != {kind}: {}",
                    execution.error_kind(),
                    execution.text
                ));
            }
        }
        for message in &expected.messages {
            if !execution.text.contains(message.as_str()) {
                problems.push(format!("text lacks {message:?}: {}", execution.text));
            }
        }
        for message in &expected.absent {
            if execution.text.contains(message.as_str()) {
                problems.push(format!("text has {message:?}: {}", execution.text));
            }
        }
        if let Some(logs) = &expected.logs {
            let actual = log_lines(&execution.text);
            if &serde_json::json!(actual) != logs {
                problems.push(format!("logs {actual:?} != expected {logs}"));
            }
        }
        let blocks = serde_json::json!(execution.blocks);
        if blocks != *expected.blocks.as_ref().unwrap_or(&serde_json::json!([])) {
            problems.push(format!(
                "blocks {blocks} != expected {}",
                expected.blocks.as_ref().unwrap_or(&serde_json::json!([]))
            ));
        }
        problems
    }
}

/// The console lines of an answer's text, after its value and warnings: a stream other than
/// `log` shows as a `[stream] ` prefix there.
fn log_lines(text: &str) -> Vec<String> {
    text.split_once("\n\n--- console")
        .and_then(|(_, console)| console.split_once("---\n"))
        .map(|(_, lines)| lines.split('\n').map(str::to_owned).collect())
        .unwrap_or_default()
}

fn expectation(path: &Path, code: &str, marker: &str) -> Result<Expectation> {
    let mut expected = Expectation::default();
    for line in code.lines() {
        let Some(comment) = line.trim().strip_prefix(marker) else {
            continue;
        };
        let comment = comment.trim();
        let parse = |text: &str| -> Result<Value> {
            serde_json::from_str(text)
                .with_context(|| format!("{}: bad JSON in expectation {text:?}", path.display()))
        };
        if let Some(json) = comment.strip_prefix("expect:") {
            expected.value = Some(parse(json.trim())?);
        } else if let Some(kind) = comment.strip_prefix("expect-error:") {
            expected.error_kind = Some(kind.trim().to_owned());
        } else if let Some(message) = comment.strip_prefix("expect-message:") {
            expected.messages.push(message.trim().to_owned());
        } else if let Some(message) = comment.strip_prefix("expect-no-message:") {
            expected.absent.push(message.trim().to_owned());
        } else if let Some(json) = comment.strip_prefix("expect-logs:") {
            expected.logs = Some(parse(json.trim())?);
        } else if let Some(json) = comment.strip_prefix("expect-blocks:") {
            expected.blocks = Some(parse(json.trim())?);
        } else if let Some(why) = comment.strip_prefix("pending:") {
            expected.pending = Some(why.trim().to_owned());
        } else if comment == "also-while-starting" {
            expected.while_starting = true;
        }
    }
    if expected.value.is_some() == expected.error_kind.is_some() {
        bail!(
            "{}: a case needs exactly one of `expect:` and `expect-error:`",
            path.display()
        );
    }
    Ok(expected)
}

/// The case files (`.js`, `.ts`, `.py`) in `folders`, sorted.
pub fn files_in(folders: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for folder in folders {
        for entry in
            std::fs::read_dir(folder).with_context(|| format!("reading {}", folder.display()))?
        {
            let path = entry?.path();
            if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("js" | "ts" | "py")
            ) {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Variables are written in the program and the expectation alike; one the test does not
    /// give is named in the error, with those it gives.
    #[test]
    fn variables_are_written_in_and_unknown_ones_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("case.js");
        std::fs::write(
            &path,
            "// expect: {\"head\":\"{{HEAD}}\"}\nreturn { head: \"{{HEAD}}\" };\n",
        )
        .unwrap();
        let case = Case::read_with(&path, &[("HEAD", "abc123".to_owned())]).unwrap();
        assert_eq!(case.code.matches("abc123").count(), 2, "{}", case.code);
        assert_eq!(
            case.expected.value,
            Some(serde_json::json!({ "head": "abc123" }))
        );
        let error = Case::read_with(&path, &[("REPO", "/tmp".to_owned())])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("{{HEAD}} is not one of the variables this test gives ({{REPO}})"),
            "{error}"
        );
    }
}
