//! Lines of a stream (newline-delimited JSON-RPC, or what a process writes to stderr), each
//! bounded in length however the other side writes, and what happened to a line too long.
//!
//! [`LineReader`] looks at each byte once (lines are found with `memchr`), never holds more than
//! its bound and one read, and is cancel safe: it may be dropped at its one await (`receive` runs
//! inside a `select!`), and a line read in part stays in it for the next call. A line longer than
//! the bound is, as the [`Overflow`] given says:
//!
//! - [`Overflow::Fail`]: the end of the stream. The lines before it are handed on first; then
//!   every read says [`Next::TooLong`]. For a peer whose messages cannot be resynchronised.
//! - [`Overflow::Skip`]: read to its end without being kept, its bytes shown as they pass (to
//!   find its id, so the request still gets its answer) and its length reported.
//! - [`Overflow::Cut`]: its first bytes kept, the rest dropped, and the cut said: stderr lines.
//!
//! This works around rmcp's line transport, which skips a line longer than its limit after a log
//! line and leaves the request it carried waiting (rmcp 3.11:
//! `transport::async_rw::AsyncRwTransport::read_line` returns `LineRead::Oversized` and
//! `AsyncRwTransport::receive` goes on to the next line). [`for_each_line`] serves stderr.

use std::io;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, BufReader};

/// A line buffer grown past this by a long line is let go afterwards, not kept for every line.
const KEPT_LINE_CAPACITY: usize = 1024 * 1024;

/// What happens to a line longer than the bound (see the module).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// The stream cannot be read further.
    Fail,
    /// The line is read to its end, not kept.
    Skip,
    /// The line is cut at the bound.
    Cut,
}

/// What reading one line came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// A line ended by a newline: [`LineReader::line`] holds it, without the newline (cut, with
    /// [`Overflow::Cut`], when [`LineReader::was_cut`] says so).
    Line,
    /// The stream ended in the middle of a line: [`LineReader::line`] holds what was read of it.
    Unfinished,
    /// A line longer than the bound, `bytes` long so far (without its newline). With
    /// [`Overflow::Fail`] this is where the stream stops; with [`Overflow::Skip`] the whole line
    /// was read and dropped.
    TooLong {
        /// Its length, as far as it was read.
        bytes: usize,
    },
    /// The stream ended after a whole line (or a line too long that did not end).
    End,
}

/// Reads lines of at most `max` bytes each (see the module).
#[derive(Debug)]
pub struct LineReader<R> {
    reader: R,
    /// The line being read, or the one last handed out.
    line: Vec<u8>,
    max: usize,
    overflow: Overflow,
    /// The length so far of a line past the bound: one being skipped, or the one that stopped
    /// the stream.
    over: Option<usize>,
    /// The line in `line` was cut.
    cut: bool,
    /// The line in `line` was handed out: the next read starts a new one.
    handed: bool,
}

impl<R: AsyncRead + Unpin> LineReader<BufReader<R>> {
    /// Lines of `reader`, of at most `max` bytes each.
    pub fn new(reader: R, max: usize, overflow: Overflow) -> Self {
        Self::buffered(BufReader::new(reader), max, overflow)
    }

    /// The same, reading `capacity` bytes at a time.
    pub fn with_capacity(capacity: usize, reader: R, max: usize, overflow: Overflow) -> Self {
        Self::buffered(BufReader::with_capacity(capacity, reader), max, overflow)
    }
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// Lines of an already buffered `reader`.
    pub fn buffered(reader: R, max: usize, overflow: Overflow) -> Self {
        Self {
            reader,
            line: Vec::new(),
            max,
            overflow,
            over: None,
            cut: false,
            handed: false,
        }
    }

    /// The same with lines of at most `max` bytes.
    #[must_use]
    pub fn with_max(mut self, max: usize) -> Self {
        self.max = max;
        self
    }

    /// From the next line on, lines of at most `max` bytes.
    pub fn set_max(&mut self, max: usize) {
        self.max = max;
    }

    /// The longest line kept.
    pub fn max(&self) -> usize {
        self.max
    }

    /// The line last read (see [`Next`]).
    pub fn line(&self) -> &[u8] {
        &self.line
    }

    /// The line last read, to take or to read in place.
    pub fn line_mut(&mut self) -> &mut Vec<u8> {
        &mut self.line
    }

    /// The line last read, taken out of the reader.
    pub fn take_line(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.line)
    }

    /// Whether the line last read was cut at the bound ([`Overflow::Cut`]).
    pub fn was_cut(&self) -> bool {
        self.cut
    }

    /// Reads the next line.
    pub async fn next(&mut self) -> io::Result<Next> {
        self.next_showing(|_| {}).await
    }

    /// Reads the next line; the bytes of a line too long that [`Overflow::Skip`] drops are shown
    /// to `dropped` as they pass, in pieces, without its newline.
    pub async fn next_showing(&mut self, mut dropped: impl FnMut(&[u8])) -> io::Result<Next> {
        if let (Overflow::Fail, Some(bytes)) = (self.overflow, self.over) {
            return Ok(Next::TooLong { bytes });
        }
        if self.handed {
            self.start_line();
        }
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                self.handed = true;
                if self.over.take().is_some() || (self.line.is_empty() && !self.cut) {
                    return Ok(Next::End);
                }
                return Ok(Next::Unfinished);
            }
            let newline = memchr::memchr(b'\n', available);
            let piece = &available[..newline.unwrap_or(available.len())];
            let used = newline.map_or(available.len(), |at| at + 1);
            if let Some(bytes) = &mut self.over {
                *bytes += piece.len();
                dropped(piece);
            } else if self.line.len() + piece.len() > self.max {
                let bytes = self.line.len() + piece.len();
                match self.overflow {
                    Overflow::Fail => {
                        self.over = Some(bytes);
                        return Ok(Next::TooLong { bytes });
                    }
                    Overflow::Skip => {
                        dropped(&self.line);
                        dropped(piece);
                        self.over = Some(bytes);
                        self.line = Vec::new();
                    }
                    Overflow::Cut => {
                        let room = self.max.saturating_sub(self.line.len());
                        self.line.extend_from_slice(&piece[..room]);
                        self.cut = true;
                    }
                }
            } else {
                self.line.extend_from_slice(piece);
            }
            self.reader.consume(used);
            if newline.is_some() {
                self.handed = true;
                return Ok(match self.over.take() {
                    Some(bytes) => Next::TooLong { bytes },
                    None => Next::Line,
                });
            }
        }
    }

    /// Forgets the line last read now rather than at the next read; a large buffer is let go
    /// rather than held for the connection's life.
    pub fn forget_line(&mut self) {
        if self.handed {
            self.start_line();
        }
    }

    fn start_line(&mut self) {
        self.handed = false;
        self.cut = false;
        if self.line.capacity() > KEPT_LINE_CAPACITY {
            self.line = Vec::new();
        } else {
            self.line.clear();
        }
    }
}

/// Reads `stream` to its end and hands `each` one line at a time (the last one too, without its
/// newline), as text (bytes that are not UTF-8 replaced), cut to `max_line` bytes with `mark`
/// after the cut when longer: however a process writes, what is held is a line and one read.
/// Fails with the stream's error.
pub async fn for_each_line(
    stream: impl AsyncRead + Unpin,
    max_line: usize,
    mark: &str,
    mut each: impl FnMut(&str),
) -> io::Result<()> {
    let mut lines = LineReader::new(stream, max_line, Overflow::Cut);
    loop {
        match lines.next().await? {
            Next::Line | Next::Unfinished => {
                let mut text = String::from_utf8_lossy(lines.line()).into_owned();
                if lines.was_cut() {
                    text.push_str(mark);
                }
                each(&text);
            }
            Next::End | Next::TooLong { .. } => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read_all(reader: &mut LineReader<impl AsyncBufRead + Unpin>) -> Vec<(Next, Vec<u8>)> {
        let mut read = Vec::new();
        loop {
            let next = reader.next().await.unwrap();
            read.push((next, reader.line().to_vec()));
            if matches!(next, Next::End) || read.len() > 20 {
                return read;
            }
        }
    }

    fn lines(
        input: &'static [u8],
        max: usize,
        overflow: Overflow,
    ) -> LineReader<impl AsyncBufRead + Unpin> {
        // A small buffer: lines arrive in pieces, as reads of a pipe do.
        LineReader::buffered(BufReader::with_capacity(4, input), max, overflow)
    }

    #[tokio::test]
    async fn lines_are_read_whole_and_bounded() {
        let mut reader = lines(b"one\ntwo three\nfour", 20, Overflow::Fail);
        let read = read_all(&mut reader).await;
        assert_eq!(
            read,
            [
                (Next::Line, b"one".to_vec()),
                (Next::Line, b"two three".to_vec()),
                (Next::Unfinished, b"four".to_vec()),
                (Next::End, Vec::new()),
            ]
        );
        // The lines before a line too long are handed on; then the stream stops.
        let mut reader = lines(b"ok\na line too long\nnext\n", 8, Overflow::Fail);
        assert_eq!(reader.next().await.unwrap(), Next::Line);
        assert_eq!(reader.line(), b"ok");
        for _ in 0..2 {
            assert!(matches!(
                reader.next().await.unwrap(),
                Next::TooLong { bytes } if bytes > 8
            ));
        }
    }

    /// The bound is on the line: one exactly that long is read, one a byte longer is not.
    #[tokio::test]
    async fn the_bound_counts_the_line_not_its_newline() {
        let mut reader = lines(b"12345\n123456\r\n", 5, Overflow::Skip);
        assert_eq!(reader.next().await.unwrap(), Next::Line);
        assert_eq!(reader.line(), b"12345");
        assert_eq!(reader.next().await.unwrap(), Next::TooLong { bytes: 7 });
        assert_eq!(reader.next().await.unwrap(), Next::End);
    }

    #[tokio::test]
    async fn a_skipped_line_is_shown_as_it_passes_and_reading_goes_on() {
        let mut reader = lines(
            b"{\"id\":1}\n{\"x\":\"long\",\"id\":2}\n{\"id\":3}\n",
            10,
            Overflow::Skip,
        );
        assert_eq!(reader.next().await.unwrap(), Next::Line);
        let mut shown = Vec::new();
        let next = reader
            .next_showing(|piece| shown.extend_from_slice(piece))
            .await
            .unwrap();
        assert_eq!(next, Next::TooLong { bytes: 19 });
        assert_eq!(shown, b"{\"x\":\"long\",\"id\":2}");
        assert_eq!(reader.next().await.unwrap(), Next::Line);
        assert_eq!(reader.line(), b"{\"id\":3}");
        // A line too long that the stream ends in is no line.
        let mut reader = lines(b"a line too long", 4, Overflow::Skip);
        assert_eq!(reader.next().await.unwrap(), Next::End);
    }

    #[tokio::test]
    async fn cut_lines_are_marked_and_the_last_one_counts() {
        let mut seen = Vec::new();
        let input: &[u8] = b"short\nthis one is long\n\n\xff\xfe\nlast";
        for_each_line(input, 8, "\u{2026} (cut)", |line| {
            seen.push(line.to_owned())
        })
        .await
        .unwrap();
        assert_eq!(
            seen,
            [
                "short",
                "this one\u{2026} (cut)",
                "",
                "\u{fffd}\u{fffd}",
                "last"
            ]
        );
    }

    /// A read dropped at its await loses nothing: the line read in part is finished next time.
    #[tokio::test]
    async fn a_dropped_read_keeps_its_part_of_the_line() {
        let (mut writer, reader) = tokio::io::duplex(64);
        let mut reader = LineReader::new(reader, 100, Overflow::Fail);
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"{\"jsonrpc\":")
            .await
            .unwrap();
        {
            let mut reading = std::pin::pin!(reader.next());
            let polled = std::future::poll_fn(|context| {
                std::task::Poll::Ready(reading.as_mut().poll(context))
            })
            .await;
            assert!(polled.is_pending());
        }
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"\"2.0\"}\n")
            .await
            .unwrap();
        assert_eq!(reader.next().await.unwrap(), Next::Line);
        assert_eq!(reader.line(), b"{\"jsonrpc\":\"2.0\"}");
    }
}
