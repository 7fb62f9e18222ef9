//! What a gateway and a `toolweave runner` send each other over one connection: the messages of
//! a worker (`docs/protocol.md`), each with the id of its execution, after a greeting that
//! checks the version and, over TCP, the token. One JSON object per line, every line bounded.

use std::io;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::AsyncBufRead;
use toolweave_jsonrpc::reader::{LineReader, Next, Overflow};
use toolweave_process::{FromEngine, WorkerJob};
use toolweave_sandbox::{HostReply, Manifest};

use crate::json_size::LARGE_JSON_BYTES;

/// Gateway → runner.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum ToRunner {
    /// The first message: the gateway's protocol version, and the runner's token when it
    /// listens on TCP.
    Hello {
        /// [`toolweave_process::PROTOCOL_VERSION`] of the gateway.
        protocol: u32,
        /// The bearer token the runner was started with (`--token-env`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<String>,
    },
    /// The manifest jobs that leave theirs out mean, from now on on this connection.
    Expect(Arc<Manifest>),
    /// Run a job; `id` names the execution in every later message.
    Start {
        /// The execution's id, unique on the connection.
        id: u64,
        /// The job, as a local worker gets it.
        job: WorkerJob,
    },
    /// A reply (or a cancel) for execution `id`.
    Reply {
        /// The execution.
        id: u64,
        /// What the guest gets.
        reply: HostReply,
    },
}

/// Runner → gateway.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum FromRunner {
    /// The answer to [`ToRunner::Hello`]: this runner runs jobs of `protocol`.
    Hello {
        /// The runner's protocol version.
        protocol: u32,
        /// What it is, for people (`toolweave 0.1.0`).
        runner: String,
    },
    /// The runner will not serve this connection, and says why; it closes it.
    Refused {
        /// Why, for the person who set the gateway up.
        message: String,
    },
    /// The runner read the job of execution `id` and runs it: before this, a job lost with
    /// its connection may be sent again.
    Taken {
        /// The execution.
        id: u64,
    },
    /// A message of execution `id`'s worker.
    Message {
        /// The execution.
        id: u64,
        /// What its worker sent.
        message: FromEngine,
    },
}

/// The longest greeting either side reads.
pub(crate) const MAX_HELLO_BYTES: usize = 64 * 1024;
/// Room for what an envelope adds to a worker's message (its kind, the id).
pub(crate) const ENVELOPE_BYTES: usize = 1024;

/// What one bounded read of a line came to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// A whole line is in the buffer, without its newline.
    Line,
    /// The stream ended (a partial last line is dropped: it cannot be a message).
    End,
    /// The line is longer than the bound; the stream cannot be read further.
    TooLong,
}

/// Reads one line of at most `max` bytes into `line` (what it held is replaced), with the
/// shared bounded reader: each byte is looked at once, and no more than `max` bytes are held
/// however the other side writes. What follows the line stays in `reader`.
pub(crate) async fn read_line(
    reader: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<Read> {
    line.clear();
    let mut lines = LineReader::buffered(reader, max, Overflow::Fail);
    Ok(match lines.next().await? {
        Next::Line => {
            *line = lines.take_line();
            Read::Line
        }
        Next::Unfinished | Next::End => Read::End,
        Next::TooLong { .. } => Read::TooLong,
    })
}

/// `message` as one line, newline included.
pub(crate) fn line(message: &impl Serialize) -> Vec<u8> {
    // Serializing these messages cannot fail: every map key is a string.
    let mut line = serde_json::to_vec(message).unwrap_or_default();
    line.push(b'\n');
    line
}

/// `message` as one line; a `large` one is written on the blocking pool, where tens of megabytes
/// hold up no other execution.
pub(crate) async fn line_of<M: Serialize + Send + 'static>(message: M, large: bool) -> Vec<u8> {
    if !large {
        return line(&message);
    }
    tokio::task::spawn_blocking(move || line(&message))
        .await
        // Writing a line does not panic; were the task lost, an empty line is refused as
        // unreadable by the other end, which names it.
        .unwrap_or_default()
}

/// The message on `line`; a line of [`LARGE_JSON_BYTES`] or more is read on the blocking pool.
/// `line` holds the same bytes after.
pub(crate) async fn parse<M: DeserializeOwned + Send + 'static>(
    line: &mut Vec<u8>,
) -> serde_json::Result<M> {
    if line.len() < LARGE_JSON_BYTES {
        return serde_json::from_slice(line);
    }
    let bytes = std::mem::take(line);
    match tokio::task::spawn_blocking(move || (serde_json::from_slice(&bytes), bytes)).await {
        Ok((parsed, bytes)) => {
            *line = bytes;
            parsed
        }
        Err(error) => Err(serde::de::Error::custom(format!(
            "the line could not be read ({error})"
        ))),
    }
}

/// Whether two tokens are equal, in time that does not depend on where they differ.
pub(crate) fn same_token(given: &str, expected: &str) -> bool {
    let (given, expected) = (given.as_bytes(), expected.as_bytes());
    let mut differ = given.len() ^ expected.len();
    for (index, byte) in expected.iter().enumerate() {
        differ |= usize::from(byte ^ given.get(index).copied().unwrap_or(!byte));
    }
    differ == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_read_whole_and_bounded() {
        let mut reader = tokio::io::BufReader::with_capacity(4, &b"one\ntwo three\nfour"[..]);
        let mut line = Vec::new();
        assert_eq!(
            read_line(&mut reader, &mut line, 20).await.unwrap(),
            Read::Line
        );
        assert_eq!(line, b"one");
        assert_eq!(
            read_line(&mut reader, &mut line, 20).await.unwrap(),
            Read::Line
        );
        assert_eq!(line, b"two three");
        assert_eq!(
            read_line(&mut reader, &mut line, 20).await.unwrap(),
            Read::End
        );
        let mut reader = tokio::io::BufReader::with_capacity(4, &b"a line too long\n"[..]);
        assert_eq!(
            read_line(&mut reader, &mut line, 8).await.unwrap(),
            Read::TooLong
        );
    }

    #[test]
    fn tokens_match_only_when_equal() {
        assert!(same_token("secret", "secret"));
        assert!(!same_token("secreT", "secret"));
        assert!(!same_token("secret1", "secret"));
        assert!(!same_token("secre", "secret"));
        assert!(!same_token("", "secret"));
    }
}
