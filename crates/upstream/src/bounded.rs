//! What toolweave reads from a stdio server's stdout before the MCP transport does: a bound on the
//! size of one message, and a note of lines that are not messages.
//!
//! Messages over stdio are lines. The MCP transport drops a line longer than its own bound and
//! keeps reading, which leaves the call that line answered waiting until its timeout, with an
//! error that names the wrong cause. This reader ends the connection instead, at a bound of its
//! own, and records why, so the server's error says what happened.
//!
//! The transport also skips, silently, a line that is not JSON: a server that logs to stdout (a
//! `Listening on port 3000` banner, or a server started in some other mode that never speaks
//! MCP) shows only as a start that times out. This reader warns once per process, naming the
//! server and the first such line, and keeps that line for the error a failed start reports. It
//! looks at one byte per line: a message starts with `{` (or `[`, a batch) after any blanks.
//! Lines are read by `toolweave_jsonrpc`'s bounded reader.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use tokio::io::{AsyncRead, BufReader};
use toolweave_jsonrpc::reader::{LineReader, Next, Overflow};

/// The largest message (one line) accepted from an upstream server.
pub(crate) const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Bytes kept of the first line that is not a message; the rest is cut off.
const MAX_STRAY_LINE_BYTES: usize = 200;

/// What the reader noticed on one process's stdout. Shared with the process, which reports it.
#[derive(Debug, Default)]
pub(crate) struct StdoutFindings {
    /// Set when a line was longer than the bound.
    oversized: AtomicBool,
    /// The first line that is not an MCP message, cut at `MAX_STRAY_LINE_BYTES`.
    first_stray_line: OnceLock<String>,
}

impl StdoutFindings {
    /// Whether a line was longer than the bound.
    pub(crate) fn oversized(&self) -> bool {
        self.oversized.load(Ordering::Relaxed)
    }

    /// The first line that was not an MCP message, if one was.
    pub(crate) fn first_stray_line(&self) -> Option<&str> {
        self.first_stray_line.get().map(String::as_str)
    }
}

/// Reads a server's stdout line by line, ending once a line grows past a bound.
#[derive(Debug)]
pub(crate) struct BoundedLines<R> {
    lines: LineReader<BufReader<R>>,
    /// The server's name, for the warning.
    server: String,
    findings: Arc<StdoutFindings>,
}

impl<R: AsyncRead + Unpin> BoundedLines<R> {
    /// `inner`, with lines of at most `limit` bytes, for server `server`; what it notices goes
    /// into `findings`.
    pub(crate) fn new(
        inner: R,
        limit: usize,
        server: impl Into<String>,
        findings: Arc<StdoutFindings>,
    ) -> Self {
        Self {
            lines: LineReader::new(inner, limit, Overflow::Fail),
            server: server.into(),
            findings,
        }
    }

    /// Reads the next line (a last one without a newline too) into [`Self::line`]; `false` at
    /// the end of the stream, an error past the bound. Cancel safe.
    pub(crate) async fn next(&mut self) -> io::Result<bool> {
        match self.lines.next().await? {
            Next::Line | Next::Unfinished => {
                self.note(self.lines.line());
                Ok(true)
            }
            Next::End => Ok(false),
            Next::TooLong { .. } => {
                self.findings.oversized.store(true, Ordering::Relaxed);
                Err(too_long(self.lines.max()))
            }
        }
    }

    /// The line last read, without its newline: to read in place, or to take.
    pub(crate) fn line(&mut self) -> &mut Vec<u8> {
        self.lines.line_mut()
    }

    /// Lets go of the line last read (a large buffer is not held for the connection's life).
    pub(crate) fn forget_line(&mut self) {
        self.lines.forget_line();
    }

    /// Notes `line` when it is the first that is not a message (and not blank).
    fn note(&self, line: &[u8]) {
        if self.findings.first_stray_line.get().is_some() {
            return;
        }
        // Blanks, and the bytes of a byte order mark, which the transport skips too.
        let Some(start) = line
            .iter()
            .position(|byte| !byte.is_ascii_whitespace() && !matches!(byte, 0xEF | 0xBB | 0xBF))
        else {
            return;
        };
        if matches!(line[start], b'{' | b'[') {
            return;
        }
        let kept = &line[start..];
        let cut = kept.len() > MAX_STRAY_LINE_BYTES;
        let text = String::from_utf8_lossy(kept.get(..MAX_STRAY_LINE_BYTES).unwrap_or(kept));
        let mut text = text.trim_end().to_owned();
        if cut {
            text.push('…');
        }
        tracing::warn!(
            server = %self.server,
            "the server wrote a line to stdout that is not an MCP message: {text:?}. stdout is \
             the MCP channel; the server should write its logs to stderr (toolweave skips such \
             lines and reports only the first)"
        );
        let _ = self.findings.first_stray_line.set(text);
    }
}

fn too_long(limit: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("a message longer than {} MiB", limit / (1024 * 1024)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line of `input`, and what the reader noticed.
    async fn read_all(input: &[u8], limit: usize) -> (Vec<Vec<u8>>, Arc<StdoutFindings>) {
        let findings = Arc::new(StdoutFindings::default());
        let mut reader = BoundedLines::new(input, limit, "test", findings.clone());
        let mut lines = Vec::new();
        while let Ok(true) = reader.next().await {
            lines.push(reader.line().clone());
        }
        (lines, findings)
    }

    #[tokio::test]
    async fn lines_within_the_bound_pass_and_a_longer_one_fails() {
        let (lines, findings) = read_all(b"{\"a\":1}\n[5678]\n", 8).await;
        assert_eq!(lines, [&b"{\"a\":1}"[..], b"[5678]"]);
        assert!(!findings.oversized());

        // The whole line before the long one is still read.
        let findings = Arc::new(StdoutFindings::default());
        let mut reader = BoundedLines::new(&b"{234\n{6789\n"[..], 4, "test", findings.clone());
        assert!(reader.next().await.unwrap());
        assert_eq!(reader.line(), b"{234");
        let error = reader.next().await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(findings.oversized());
        let error = reader.next().await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
    }

    #[tokio::test]
    async fn the_first_line_that_is_not_a_message_is_kept() {
        // Messages, blank lines and a byte order mark are not stray; every line is handed on.
        let input = "\u{feff}{\"jsonrpc\":\"2.0\"}\n\n  \t\r\n  [1]\r\nListening on port 3000\r\n{}\nsecond\n";
        let (lines, findings) = read_all(input.as_bytes(), 1024).await;
        assert_eq!(lines.len(), input.lines().count());
        assert_eq!(findings.first_stray_line(), Some("Listening on port 3000"));

        let (_, findings) = read_all(b"{}\n\n[]\n   {\"id\":1}\n", 1024).await;
        assert_eq!(findings.first_stray_line(), None);

        // A last line without a newline counts too.
        let (_, findings) = read_all(b"{}\n  ready", 1024).await;
        assert_eq!(findings.first_stray_line(), Some("ready"));
    }

    #[tokio::test]
    async fn a_long_stray_line_is_cut_and_lines_split_across_reads_are_judged_whole() {
        let long = format!("{}\n", "y".repeat(5000));
        let (_, findings) = read_all(long.as_bytes(), 1024 * 1024).await;
        let kept = findings.first_stray_line().unwrap();
        assert_eq!(kept, format!("{}…", "y".repeat(MAX_STRAY_LINE_BYTES)));

        // Read one byte at a time: a line's first byte and its rest come in separate reads.
        let (writer, reader) = tokio::io::duplex(1);
        let findings = Arc::new(StdoutFindings::default());
        let mut reader = BoundedLines::new(reader, 1024, "test", findings.clone());
        let writing = tokio::spawn(async move {
            let mut writer = writer;
            tokio::io::AsyncWriteExt::write_all(&mut writer, b"  {\"id\":1}\n  warn: x\n").await
        });
        while let Ok(true) = reader.next().await {}
        writing.await.unwrap().unwrap();
        assert_eq!(findings.first_stray_line(), Some("warn: x"));
    }
}
