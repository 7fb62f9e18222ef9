//! Event streams (`text/event-stream`) read as bytes, for the HTTP transports.
//!
//! An SSE parser that decodes text would fail on the first byte that is not UTF-8 and lose the
//! message around it; this one hands each event's data on as bytes, so the connection's
//! [`Wire`](crate::wire::Wire) can say what is wrong with them and tie them to the request they
//! answer. Lines end with LF, CR LF or CR; `data` lines of one event are joined with LF; `event`,
//! `id` and `retry` are kept; comments and other fields are skipped. One event may hold at most
//! `max_event` bytes: a longer one ends the stream with [`EventError::TooLarge`]. Lines are
//! searched for once, however the bytes are split into chunks.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;

/// One event.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// Its `event` field (`None`: a message).
    pub(crate) event: Option<String>,
    /// Its `id` field.
    pub(crate) id: Option<String>,
    /// Its `retry` field, in milliseconds.
    pub(crate) retry: Option<u64>,
    /// Its data lines joined with LF, as sent.
    pub(crate) data: Option<Vec<u8>>,
}

impl Event {
    /// Whether it carries a message (no event name, or `message`).
    pub(crate) fn is_message(&self) -> bool {
        matches!(self.event.as_deref(), None | Some("" | "message"))
    }
}

/// Why an event stream ended early.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EventError {
    /// One event was longer than the bound.
    #[error("an event longer than {limit} bytes")]
    TooLarge {
        /// The bound.
        limit: usize,
    },
    /// Reading the body failed.
    #[error("{0}")]
    Body(Box<dyn std::error::Error + Send + Sync>),
}

/// The events of a body that arrives as a stream of byte chunks.
pub(crate) struct Events<S> {
    chunks: S,
    max_event: usize,
    /// Bytes not yet split into lines, from `start` on.
    buffer: Vec<u8>,
    start: usize,
    /// Bytes after `start` known to hold no line end.
    searched: usize,
    /// The last chunk ended with CR: an LF first in the next one ends no new line.
    after_cr: bool,
    /// Whether the first line (which may open with a byte order mark) is still to come.
    first_line: bool,
    /// The event being read, and its size so far.
    current: Event,
    size: usize,
    ready: VecDeque<Event>,
    /// Why the stream ended early, told once the events before it are taken.
    failed: Option<EventError>,
    ended: bool,
}

impl<S> Events<S> {
    /// The events in `chunks`, each at most `max_event` bytes.
    pub(crate) fn new(chunks: S, max_event: usize) -> Self {
        Self {
            chunks,
            max_event,
            buffer: Vec::new(),
            start: 0,
            searched: 0,
            after_cr: false,
            first_line: true,
            current: Event::default(),
            size: 0,
            ready: VecDeque::new(),
            failed: None,
            ended: false,
        }
    }

    /// Splits the complete lines of the buffer off and reads them.
    fn read_lines(&mut self) -> Result<(), EventError> {
        let buffer = std::mem::take(&mut self.buffer);
        let read = self.read_lines_of(&buffer);
        self.buffer = buffer;
        // Drop what was read, once per chunk rather than once per line.
        self.buffer.drain(..self.start);
        self.start = 0;
        read
    }

    fn read_lines_of(&mut self, buffer: &[u8]) -> Result<(), EventError> {
        loop {
            let unread = &buffer[self.start..];
            if self.after_cr && !unread.is_empty() {
                self.after_cr = false;
                if unread[0] == b'\n' {
                    self.start += 1;
                    continue;
                }
            }
            let Some(offset) = memchr::memchr2(b'\n', b'\r', &unread[self.searched..]) else {
                self.searched = unread.len();
                if unread.len().saturating_add(self.size) > self.max_event {
                    return Err(EventError::TooLarge {
                        limit: self.max_event,
                    });
                }
                return Ok(());
            };
            let line = &unread[..self.searched + offset];
            let terminator = unread[line.len()];
            self.start += line.len() + 1;
            self.searched = 0;
            if terminator == b'\r' {
                match buffer.get(self.start) {
                    Some(b'\n') => self.start += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.read_line(line)?;
        }
    }

    fn read_line(&mut self, mut line: &[u8]) -> Result<(), EventError> {
        if std::mem::take(&mut self.first_line) {
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            let event = std::mem::take(&mut self.current);
            self.size = 0;
            if event != Event::default() {
                self.ready.push_back(finish(event));
            }
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        self.size += value.len() + 1;
        if self.size > self.max_event {
            return Err(EventError::TooLarge {
                limit: self.max_event,
            });
        }
        match field {
            b"data" => {
                let data = self.current.data.get_or_insert_with(Vec::new);
                data.extend_from_slice(value);
                data.push(b'\n');
            }
            b"event" => self.current.event = Some(String::from_utf8_lossy(value).into_owned()),
            b"id" if !value.contains(&0) => {
                self.current.id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" => {
                if let Some(retry) = std::str::from_utf8(value)
                    .ok()
                    .and_then(|text| text.parse::<u64>().ok())
                {
                    self.current.retry = Some(retry);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The event as dispatched: its data without the LF after the last line.
fn finish(mut event: Event) -> Event {
    if let Some(data) = &mut event.data {
        data.pop();
    }
    event
}

impl<S, B, E> Stream for Events<S>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::error::Error + Send + Sync + 'static,
{
    type Item = Result<Event, EventError>;

    fn poll_next(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(event) = this.ready.pop_front() {
                return Poll::Ready(Some(Ok(event)));
            }
            if let Some(error) = this.failed.take() {
                return Poll::Ready(Some(Err(error)));
            }
            if this.ended {
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.chunks).poll_next(context) {
                Poll::Pending => return Poll::Pending,
                // An event the stream did not finish is not dispatched.
                Poll::Ready(None) => this.ended = true,
                Poll::Ready(Some(Err(error))) => {
                    this.ended = true;
                    this.failed = Some(EventError::Body(Box::new(error)));
                }
                Poll::Ready(Some(Ok(chunk))) => {
                    this.buffer.extend_from_slice(chunk.as_ref());
                    if let Err(error) = this.read_lines() {
                        this.ended = true;
                        this.failed = Some(error);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    async fn events(chunks: &[&[u8]], max_event: usize) -> Vec<Result<Event, String>> {
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
            chunks.iter().map(|chunk| Ok(chunk.to_vec())).collect();
        Events::new(futures::stream::iter(chunks), max_event)
            .map(|event| event.map_err(|error| error.to_string()))
            .collect()
            .await
    }

    fn data(text: &[u8]) -> Event {
        Event {
            data: Some(text.to_vec()),
            ..Event::default()
        }
    }

    #[tokio::test]
    async fn events_keep_their_bytes_and_fields() {
        let read = events(
            &[b"\xEF\xBB\xBFevent: endpoint\ndata: /message?s=1\n\n: comment\ndata: {\"a\":\"\xff\"}\r\ndata:second\r\rid: 7\nretry: 50\n\n"],
            1024,
        )
        .await;
        assert_eq!(
            read,
            [
                Ok(Event {
                    event: Some("endpoint".into()),
                    ..data(b"/message?s=1")
                }),
                Ok(data(b"{\"a\":\"\xff\"}\nsecond")),
                Ok(Event {
                    id: Some("7".into()),
                    retry: Some(50),
                    ..Event::default()
                }),
            ]
        );
        assert!(read[1].as_ref().unwrap().is_message());
        assert!(!read[0].as_ref().unwrap().is_message());
    }

    #[tokio::test]
    async fn lines_split_across_chunks_and_crlf_split_between_them() {
        let read = events(
            &[
                b"da",
                b"ta: 1",
                b"23\r",
                b"\n",
                b"\r",
                b"\ndata: 4\n",
                b"\n",
            ],
            1024,
        )
        .await;
        assert_eq!(read, [Ok(data(b"123")), Ok(data(b"4"))]);
        // An event the stream did not finish is dropped.
        assert_eq!(events(&[b"data: 1\n"], 1024).await, []);
    }

    #[tokio::test]
    async fn an_event_past_the_bound_ends_the_stream() {
        let read = events(&[b"data: 12345\n\ndata: 1234", b"56789\n\n"], 8).await;
        assert_eq!(
            read,
            [
                Ok(data(b"12345")),
                Err("an event longer than 8 bytes".to_owned())
            ]
        );
        // Also when its line has no end yet.
        let read = events(&[b"data: ", &[b'x'; 100]], 8).await;
        assert_eq!(read, [Err("an event longer than 8 bytes".to_owned())]);
    }
}
