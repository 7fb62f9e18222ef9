//! The stdio transport: rmcp's non-blocking pipes, with stdin watched for lines that cannot be
//! JSON-RPC messages.
//!
//! rmcp ignores a line that is not JSON, as the other official SDKs do (answering it could start
//! an error storm with a peer that echoes what it reads), and says so only at debug level.
//! Someone typing at toolweave, or a wrapper that writes something else into the pipe, would
//! then get no answer and no reason. [`CheckedLines`] passes every byte through unchanged and
//! logs a warning for each line whose first character cannot begin a JSON-RPC message.

use std::pin::Pin;
use std::task::{Context, Poll};

use rmcp::transport::{StdioReader, StdioWriter};
use tokio::io::{AsyncRead, ReadBuf};

/// Lines reported before the rest are only counted, so a flood of garbage cannot flood the log.
const REPORTED_LINES: u32 = 10;

/// stdin and stdout for an MCP session over stdio.
pub fn transport() -> (CheckedLines<StdioReader>, StdioWriter) {
    let (reader, writer) = rmcp::transport::stdio_pipes();
    (CheckedLines::new(reader), writer)
}

/// A reader of newline-delimited JSON-RPC that warns about lines that are not JSON-RPC.
#[derive(Debug)]
pub struct CheckedLines<R> {
    inner: R,
    /// The number of the line being read, from 1.
    line: u64,
    /// Whether the line's first character (after blanks) has been seen.
    begun: bool,
    /// Lines reported so far.
    reported: u32,
}

impl<R> CheckedLines<R> {
    /// Watches `inner`.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            line: 1,
            begun: false,
            reported: 0,
        }
    }

    fn scan(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.begun {
                // The rest of a line that has been judged: skip to its end.
                let Some(end) = memchr::memchr(b'\n', bytes) else {
                    return;
                };
                bytes = &bytes[end + 1..];
                self.line += 1;
                self.begun = false;
                continue;
            }
            match bytes[0] {
                b'\n' => self.line += 1,
                b' ' | b'\t' | b'\r' => {}
                // A message is an object (or a batch); 0xEF begins the byte order mark rmcp skips.
                b'{' | b'[' | 0xEF => self.begun = true,
                _ => {
                    self.begun = true;
                    self.report(bytes);
                }
            }
            bytes = &bytes[1..];
        }
    }

    fn report(&mut self, rest: &[u8]) {
        self.reported += 1;
        if self.reported > REPORTED_LINES {
            return;
        }
        let head = &rest[..rest.len().min(40)];
        let end = memchr::memchr(b'\n', head).unwrap_or(head.len());
        let preview = String::from_utf8_lossy(&head[..end]);
        tracing::warn!(
            "stdin line {} is not a JSON-RPC message (it begins {:?}) and was ignored: toolweave reads one JSON-RPC message, a JSON object, per line{}",
            self.line,
            preview.trim_end(),
            if self.reported == REPORTED_LINES {
                "; further lines like it are ignored without a word"
            } else {
                ""
            }
        );
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for CheckedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let this = &mut *self;
            this.scan(&buf.filled()[before..]);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reported(chunks: &[&str]) -> (u32, u64) {
        let mut lines = CheckedLines::new(());
        for chunk in chunks {
            lines.scan(chunk.as_bytes());
        }
        (lines.reported, lines.line)
    }

    #[test]
    fn only_lines_that_cannot_begin_a_message_are_reported() {
        assert_eq!(
            reported(&["{\"jsonrpc\":\"2.0\"}\n", "  [1]\n", "\r\n"]),
            (0, 4)
        );
        assert_eq!(reported(&["not json\n", "{}\n", "hello"]), (2, 3));
        // A line split across reads is judged once, by its first character.
        assert_eq!(reported(&["   ", " {\"a\":", "\"x y\"}\n"]), (0, 2));
        assert_eq!(reported(&["   ", "x{\n"]), (1, 2));
        assert_eq!(reported(&["\u{feff}{}\n"]), (0, 2));
        // Several lines in one read, one of them long.
        let long = format!(
            "{{\"code\":\"{}\"}}\nnot json\n\n  {{}}\n",
            "x".repeat(100_000)
        );
        assert_eq!(reported(&[&long]), (1, 5));
    }
}
