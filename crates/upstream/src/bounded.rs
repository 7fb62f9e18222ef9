//! A bound on the size of one message from an upstream server.
//!
//! Messages over stdio are lines. The MCP transport drops a line longer than its own bound and
//! keeps reading, which leaves the call that line answered waiting until its timeout, with an
//! error that names the wrong cause. This reader ends the connection instead, at a bound of its
//! own, and records why, so the server's error says what happened.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The largest message (one line) accepted from an upstream server.
pub(crate) const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Reads a server's stdout, failing once a line grows past a bound.
#[derive(Debug)]
pub(crate) struct BoundedLines<R> {
    inner: R,
    limit: usize,
    /// Bytes of the current line so far.
    line: usize,
    exceeded: Arc<AtomicBool>,
}

impl<R> BoundedLines<R> {
    /// `inner`, with lines of at most `limit` bytes; `exceeded` is set when one is longer.
    pub(crate) fn new(inner: R, limit: usize, exceeded: Arc<AtomicBool>) -> Self {
        Self {
            inner,
            limit,
            line: 0,
            exceeded,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.exceeded.load(Ordering::Relaxed) {
            return Poll::Ready(Err(too_long(this.limit)));
        }
        let before = buf.filled().len();
        let Poll::Ready(read) = Pin::new(&mut this.inner).poll_read(cx, buf) else {
            return Poll::Pending;
        };
        read?;
        // Whole lines read before the one too long are handed on; the next read fails.
        let mut whole = 0;
        for (index, byte) in buf.filled()[before..].iter().enumerate() {
            if *byte == b'\n' {
                this.line = 0;
                whole = index + 1;
            } else {
                this.line += 1;
                if this.line > this.limit {
                    this.exceeded.store(true, Ordering::Relaxed);
                    buf.set_filled(before + whole);
                    return Poll::Ready(if whole > 0 {
                        Ok(())
                    } else {
                        Err(too_long(this.limit))
                    });
                }
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

    #[tokio::test]
    async fn lines_within_the_bound_pass_and_a_longer_one_fails() {
        let exceeded = Arc::new(AtomicBool::new(false));
        let mut reader = BoundedLines::new(&b"1234\n5678\n"[..], 4, exceeded.clone());
        let mut text = String::new();
        reader.read_to_string(&mut text).await.unwrap();
        assert_eq!(text, "1234\n5678\n");
        assert!(!exceeded.load(Ordering::Relaxed));

        // The whole line before the long one is still read.
        let mut reader = BoundedLines::new(&b"1234\n56789\n"[..], 4, exceeded.clone());
        let mut first = [0u8; 16];
        let read = reader.read(&mut first).await.unwrap();
        assert_eq!(&first[..read], b"1234\n");
        assert!(exceeded.load(Ordering::Relaxed));
        let error = reader.read(&mut first).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
    }
}
