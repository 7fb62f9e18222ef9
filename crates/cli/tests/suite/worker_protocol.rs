//! The execution protocol as `docs/protocol.md` writes it down: each ```` ```protocol ```` block
//! of that document is replayed against a real worker process (the `toolweave` binary started
//! as a worker, confined as the gateway starts it). The host's lines are sent as they come; each
//! worker line is read and compared with the document's, `stats` left out (they differ from run
//! to run). So the document cannot drift from what a worker does.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use super::{repo_root, toolweave};

/// How long one worker line may take to come.
const LINE_WAIT: Duration = Duration::from_secs(20);

/// One line of a transcript.
enum Line {
    /// `> ...`: the host sends it.
    Host(String),
    /// `< ...`: the worker must send it.
    Worker(Value),
}

/// The ```` ```protocol ```` blocks of `docs/protocol.md`, with the line each starts at.
fn transcripts() -> Vec<(usize, Vec<Line>)> {
    let document = std::fs::read_to_string(repo_root().join("docs/protocol.md")).unwrap();
    let mut blocks = Vec::new();
    let mut current: Option<(usize, Vec<Line>)> = None;
    for (number, line) in document.lines().enumerate() {
        match (&mut current, line) {
            (None, "```protocol") => current = Some((number + 1, Vec::new())),
            (Some(_), "```") => blocks.extend(current.take()),
            (Some((_, lines)), line) => {
                if let Some(sent) = line.strip_prefix("> ") {
                    lines.push(Line::Host(sent.to_owned()));
                } else if let Some(expected) = line.strip_prefix("< ") {
                    let expected: Value = serde_json::from_str(expected).unwrap_or_else(|error| {
                        panic!("docs/protocol.md line {}: {error}", number + 1)
                    });
                    lines.push(Line::Worker(expected));
                } else {
                    panic!(
                        "docs/protocol.md line {}: a transcript line starts with `> ` or `< `",
                        number + 1
                    );
                }
            }
            (None, _) => {}
        }
    }
    blocks
}

/// A JavaScript or Python worker, as the gateway starts one (default ceilings, empty
/// environment).
fn worker(language: &str) -> Child {
    let kind = if language == "Python" {
        "python"
    } else {
        "javascript"
    };
    Command::new(toolweave())
        .args(["__toolweave-worker", kind, "4294967296", "60", "8388608"])
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Reads the worker's stdout on a thread of its own, so a worker that says nothing fails the
/// test after [`LINE_WAIT`] instead of hanging it.
fn lines_of(stdout: ChildStdout) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

/// `message` without its `stats`, which differ from run to run.
fn without_stats(mut message: Value) -> Value {
    if let Some(finished) = message.get_mut("Finished").and_then(Value::as_object_mut) {
        finished.remove("stats");
    }
    message
}

#[test]
fn the_documented_transcripts_are_what_a_worker_does() {
    let transcripts = transcripts();
    assert!(
        transcripts.len() >= 4,
        "docs/protocol.md has {} transcripts",
        transcripts.len()
    );
    for (start, lines) in transcripts {
        let Some(Line::Host(first)) = lines.first() else {
            panic!("the transcript at docs/protocol.md line {start} starts with the host's job");
        };
        let job: Value = serde_json::from_str(first).unwrap();
        let language = job["Start"]["language"].as_str().unwrap_or_default();
        let mut child = worker(language);
        let mut stdin = child.stdin.take().unwrap();
        let received = lines_of(child.stdout.take().unwrap());
        for line in &lines {
            match line {
                Line::Host(sent) => {
                    stdin.write_all(sent.as_bytes()).unwrap();
                    stdin.write_all(b"\n").unwrap();
                    stdin.flush().unwrap();
                }
                Line::Worker(expected) => {
                    let Ok(got) = received.recv_timeout(LINE_WAIT) else {
                        let _ = child.kill();
                        let mut stderr = String::new();
                        if let Some(mut pipe) = child.stderr.take() {
                            let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
                        }
                        panic!(
                            "docs/protocol.md line {start}: the worker sent nothing where the \
                             document has {expected}; its stderr: {stderr}"
                        )
                    };
                    let got: Value = serde_json::from_str(&got).unwrap();
                    assert_eq!(
                        without_stats(got),
                        without_stats(expected.clone()),
                        "the transcript at docs/protocol.md line {start}"
                    );
                }
            }
        }
        drop(stdin);
        let finished =
            matches!(lines.last(), Some(Line::Worker(last)) if last.get("Finished").is_some());
        assert!(
            finished,
            "the transcript at docs/protocol.md line {start} ends with Finished"
        );
        // After `Finished` a worker exits: 0 when it ran the job, 1 when it refused it.
        let refused = matches!(lines.last(), Some(Line::Worker(last)) if last["Finished"]["result"]["Err"].get("Internal").is_some());
        let status = child.wait().unwrap();
        assert_eq!(
            status.code(),
            Some(i32::from(refused)),
            "docs/protocol.md line {start}"
        );
        assert!(
            received.recv_timeout(Duration::from_secs(5)).is_err(),
            "docs/protocol.md line {start}: the worker wrote after Finished"
        );
    }
}

#[test]
fn a_job_without_a_version_or_that_cannot_be_read_is_refused_by_name() {
    for (sent, expected) in [
        (
            r#"{"Start":{"code":"return 1","language":"JavaScript","limits":{"timeout":{"secs":5,"nanos":0},"memory_bytes":67108864,"stack_bytes":1048576,"max_log_bytes":65536,"max_result_bytes":1048576,"max_tool_calls":10},"manifest":{"namespaces":[]}}}"#,
            "the host sent a job in no protocol version (one older than versions), and this worker speaks version 1",
        ),
        (
            r#"{"Start":{"code":"return 1"}}"#,
            "a message from the host could not be read: missing field `language`",
        ),
        (
            "not json",
            "a message from the host could not be read: expected value",
        ),
    ] {
        let mut child = worker("JavaScript");
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(sent.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        drop(stdin);
        let output = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let mut lines = stdout.lines();
        let finished: Value = serde_json::from_str(lines.next().unwrap_or_default())
            .unwrap_or_else(|error| panic!("{sent}: {error}: {stdout}"));
        let message = finished["Finished"]["result"]["Err"]["Internal"]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(message.starts_with(expected), "{sent}: {message}");
        assert!(lines.next().is_none(), "{sent}: more after Finished");
        assert_eq!(output.status.code(), Some(1), "{sent}");
    }
}
