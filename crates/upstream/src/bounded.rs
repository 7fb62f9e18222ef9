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

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

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

/// What the current line is, as far as its first bytes tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    /// Only blanks so far.
    Blank,
    /// It starts like a JSON-RPC message.
    Message,
    /// It does not.
    Stray,
}

/// Reads a server's stdout, failing once a line grows past a bound.
#[derive(Debug)]
pub(crate) struct BoundedLines<R> {
    inner: R,
    limit: usize,
    /// The server's name, for the warning.
    server: String,
    /// Bytes of the current line so far.
    line: usize,
    kind: LineKind,
    /// The first stray line while it is read (`None` before and after).
    stray: Option<Vec<u8>>,
    findings: Arc<StdoutFindings>,
}

impl<R> BoundedLines<R> {
    /// `inner`, with lines of at most `limit` bytes, for server `server`; what it notices goes
    /// into `findings`.
    pub(crate) fn new(
        inner: R,
        limit: usize,
        server: impl Into<String>,
        findings: Arc<StdoutFindings>,
    ) -> Self {
        Self {
            inner,
            limit,
            server: server.into(),
            line: 0,
            kind: LineKind::Blank,
            stray: None,
            findings,
        }
    }

    /// Judges, keeps or skips one byte of the current line (not its newline).
    fn note(&mut self, byte: u8) {
        match self.kind {
            LineKind::Message => {}
            // Blanks, and the bytes of a byte order mark, which the transport skips too.
            LineKind::Blank if byte.is_ascii_whitespace() || matches!(byte, 0xEF | 0xBB | 0xBF) => {
            }
            LineKind::Blank if byte == b'{' || byte == b'[' => self.kind = LineKind::Message,
            LineKind::Blank => {
                self.kind = LineKind::Stray;
                if self.findings.first_stray_line.get().is_none() {
                    self.stray = Some(vec![byte]);
                }
            }
            LineKind::Stray => {
                // One byte past the bound is kept, to know the line was cut.
                if let Some(kept) = &mut self.stray
                    && kept.len() <= MAX_STRAY_LINE_BYTES
                {
                    kept.push(byte);
                }
            }
        }
    }

    /// Notes `bytes` of the current line, as far as they can still tell anything: a line known
    /// to be a message, or a stray line already kept in full, needs no more.
    fn note_all(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            let settled = match self.kind {
                LineKind::Message => true,
                LineKind::Stray => self
                    .stray
                    .as_ref()
                    .is_none_or(|kept| kept.len() > MAX_STRAY_LINE_BYTES),
                LineKind::Blank => false,
            };
            if settled {
                return;
            }
            self.note(byte);
        }
    }

    /// The current line ended (or the stream did).
    fn end_line(&mut self) {
        self.line = 0;
        self.kind = LineKind::Blank;
        let Some(kept) = self.stray.take() else {
            return;
        };
        let cut = kept.len() > MAX_STRAY_LINE_BYTES;
        let text = String::from_utf8_lossy(kept.get(..MAX_STRAY_LINE_BYTES).unwrap_or(&kept));
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

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.findings.oversized() {
            return Poll::Ready(Err(too_long(this.limit)));
        }
        let before = buf.filled().len();
        let room = buf.remaining();
        let Poll::Ready(read) = Pin::new(&mut this.inner).poll_read(cx, buf) else {
            return Poll::Pending;
        };
        read?;
        if room > 0 && buf.filled().len() == before {
            // The end of the stream: a last line without a newline is still judged.
            this.end_line();
            return Poll::Ready(Ok(()));
        }
        // Whole lines read before the one too long are handed on; the next read fails. Lines are
        // found with memchr and only a line's first bytes are looked at, so a large message
        // costs one scan.
        let read = buf.filled().len() - before;
        let mut whole = 0;
        let mut start = 0;
        while start < read {
            let rest = &buf.filled()[before + start..];
            let newline = memchr::memchr(b'\n', rest);
            let length = newline.unwrap_or(rest.len());
            if this.line + length > this.limit {
                this.findings.oversized.store(true, Ordering::Relaxed);
                this.end_line();
                buf.set_filled(before + whole);
                return Poll::Ready(if whole > 0 {
                    Ok(())
                } else {
                    Err(too_long(this.limit))
                });
            }
            this.line += length;
            this.note_all(&rest[..length]);
            start += length;
            if newline.is_some() {
                this.end_line();
                start += 1;
                whole = start;
            }
        }
        Poll::Ready(Ok(()))
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
    use tokio::io::AsyncReadExt;

    async fn read_all(input: &[u8], limit: usize) -> (String, Arc<StdoutFindings>) {
        let findings = Arc::new(StdoutFindings::default());
        let mut reader = BoundedLines::new(input, limit, "test", findings.clone());
        let mut text = String::new();
        reader.read_to_string(&mut text).await.unwrap();
        (text, findings)
    }

    #[tokio::test]
    async fn lines_within_the_bound_pass_and_a_longer_one_fails() {
        let (text, findings) = read_all(b"{\"a\":1}\n[5678]\n", 8).await;
        assert_eq!(text, "{\"a\":1}\n[5678]\n");
        assert!(!findings.oversized());

        // The whole line before the long one is still read.
        let findings = Arc::new(StdoutFindings::default());
        let mut reader = BoundedLines::new(&b"{234\n{6789\n"[..], 4, "test", findings.clone());
        let mut first = [0u8; 16];
        let read = reader.read(&mut first).await.unwrap();
        assert_eq!(&first[..read], b"{234\n");
        assert!(findings.oversized());
        let error = reader.read(&mut first).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
    }

    #[tokio::test]
    async fn the_first_line_that_is_not_a_message_is_kept() {
        // Messages, blank lines and a byte order mark are not stray; every line is handed on.
        let input = "\u{feff}{\"jsonrpc\":\"2.0\"}\n\n  \t\r\n  [1]\r\nListening on port 3000\r\n{}\nsecond\n";
        let (text, findings) = read_all(input.as_bytes(), 1024).await;
        assert_eq!(text, input);
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
        let findings = Arc::new(StdoutFindings::default());
        let input = b"  {\"id\":1}\n  warn: x\n";
        let mut reader = BoundedLines::new(&input[..], 1024, "test", findings.clone());
        let mut byte = [0u8; 1];
        while reader.read(&mut byte).await.unwrap() > 0 {}
        assert_eq!(findings.first_stray_line(), Some("warn: x"));
    }
}
