//! An upstream's stderr: every line logged (debug, with the server's name), the last few kept.
//!
//! The kept tail goes into the error a failed start or a crash reports: it is usually the one line
//! that says what is wrong (a missing token, a bad argument). It is bounded in lines and bytes so a
//! chatty server costs nothing.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Lines kept.
const MAX_LINES: usize = 20;
/// Bytes kept, all lines together.
const MAX_BYTES: usize = 4096;
/// Bytes kept of one line; the rest of a longer line is dropped.
const MAX_LINE_BYTES: usize = 512;

/// The last lines a process wrote to stderr. Cheap to clone: clones share the lines.
#[derive(Debug, Clone, Default)]
pub(crate) struct StderrTail {
    lines: Arc<Mutex<TailLines>>,
}

#[derive(Debug, Default)]
struct TailLines {
    lines: VecDeque<String>,
    bytes: usize,
}

impl StderrTail {
    /// Keeps one line, dropping the oldest ones over the bounds.
    pub(crate) fn push(&self, line: String) {
        let mut tail = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        tail.bytes += line.len();
        tail.lines.push_back(line);
        while tail.lines.len() > MAX_LINES || (tail.bytes > MAX_BYTES && tail.lines.len() > 1) {
            if let Some(oldest) = tail.lines.pop_front() {
                tail.bytes -= oldest.len();
            }
        }
    }

    /// The kept lines, oldest first, joined by newlines.
    pub(crate) fn text(&self) -> String {
        let tail = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        tail.lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Reads `stream` to its end: logs each line at debug level and keeps the tail.
pub(crate) async fn read_lines(server: String, stream: impl AsyncRead + Unpin, tail: StderrTail) {
    let mut reader = BufReader::new(stream);
    let mut line: Vec<u8> = Vec::new();
    loop {
        let chunk = match reader.fill_buf().await {
            Ok(chunk) => chunk,
            Err(error) => {
                tracing::debug!(server = %server, %error, "reading the server's stderr failed");
                break;
            }
        };
        if chunk.is_empty() {
            break;
        }
        // A line is cut at MAX_LINE_BYTES; reading goes on to its newline without keeping more.
        let (used, complete) = match chunk.iter().position(|byte| *byte == b'\n') {
            Some(newline) => (newline + 1, true),
            None => (chunk.len(), false),
        };
        let content = chunk
            .get(..used - usize::from(complete))
            .unwrap_or_default();
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(content.get(..content.len().min(room)).unwrap_or_default());
        reader.consume(used);
        if complete {
            emit(&server, &line, &tail);
            line.clear();
        }
    }
    emit(&server, &line, &tail);
}

fn emit(server: &str, line: &[u8], tail: &StderrTail) {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end();
    if text.is_empty() {
        return;
    }
    tracing::debug!(target: "toolweave::upstream::stderr", server = %server, "{text}");
    tail.push(text.to_owned());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_a_bounded_tail_of_lines() {
        let mut input = String::new();
        for number in 0..30 {
            input.push_str(&format!("line {number}\n"));
        }
        input.push_str(&"y".repeat(2000));
        input.push_str("\n\nno newline at the end");
        let tail = StderrTail::default();
        read_lines("test".into(), input.as_bytes(), tail.clone()).await;
        let text = tail.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), MAX_LINES);
        assert_eq!(lines.first(), Some(&"line 12"));
        assert_eq!(lines[18].len(), MAX_LINE_BYTES);
        assert_eq!(lines.last(), Some(&"no newline at the end"));
    }

    #[test]
    fn drops_old_lines_over_the_byte_bound() {
        let tail = StderrTail::default();
        for _ in 0..12 {
            tail.push("z".repeat(500));
        }
        assert!(tail.text().len() <= MAX_BYTES, "{}", tail.text().len());
        assert_eq!(tail.text().lines().count(), 8);
    }
}
