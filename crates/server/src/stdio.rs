//! The stdio transport: one JSON-RPC message per line on stdin, one per line on stdout, and an
//! answer for every request.
//!
//! rmcp's own line transport drops a line it cannot decode (text that is not JSON, a request
//! carrying a lone surrogate escape), answers JSON that is no message with an error addressed to
//! nobody, and discards a line over its length limit with only a log line. [`StdioTransport`]
//! reads the lines itself and decodes each with [`crate::incoming::decode`]: a request that
//! cannot be served gets its JSON-RPC error, addressed to its id whenever the id can be read
//! (also from a line too long to keep); what has no id to answer (text that is not JSON-RPC at
//! all, a broken notification) is named on stderr with its line number instead, as the other MCP
//! SDKs do not answer it either (answering it could start an error storm with a peer that echoes
//! what it reads).

use std::io;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ErrorCode, ServerJsonRpcMessage};
use rmcp::transport::{StdioReader, StdioWriter, Transport};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use toolweave_jsonrpc::id::Scanner;
use toolweave_jsonrpc::reader::{LineReader, Next, Overflow};

use crate::incoming::{self, Incoming, Invalid};

/// The longest line read: one message, a program and its arguments with room to spare. A longer
/// line is not kept; its request gets an error naming this limit.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// Lines reported on stderr before the rest are only counted, so a flood of garbage cannot flood
/// the log.
const REPORTED_LINES: u32 = 10;
/// What stdin is read in: large enough that a long program takes few reads.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// stdin and stdout for an MCP session over stdio.
pub fn transport() -> StdioTransport<StdioReader, StdioWriter> {
    let (reader, writer) = rmcp::transport::stdio_pipes();
    StdioTransport::new(reader, writer)
}

/// Newline-delimited JSON-RPC over a reader and a writer, answering every request it can
/// address (see the module).
#[derive(Debug)]
pub struct StdioTransport<R, W> {
    /// Lines of at most `max_line_bytes`; a longer one is read to its end, its id looked for.
    lines: LineReader<BufReader<R>>,
    /// Reads the id of the line over the limit being read.
    oversized_id: Scanner,
    /// Lines read so far.
    line_number: u64,
    /// Lines named on stderr so far.
    reported: u32,
    /// Shared with `send`, which may run concurrently; `None` once closed.
    writer: Arc<Mutex<Option<W>>>,
    /// An error answer on its way out: the next line is read once it is written, so a flood of
    /// bad requests waits for the client to read their answers.
    answering: Option<JoinHandle<io::Result<()>>>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin + Send + 'static> StdioTransport<R, W> {
    /// A transport reading `reader` and writing `writer`.
    pub fn new(reader: R, writer: W) -> Self {
        Self {
            lines: LineReader::with_capacity(
                READ_BUFFER_BYTES,
                reader,
                MAX_LINE_BYTES,
                Overflow::Skip,
            ),
            oversized_id: Scanner::id_only(),
            line_number: 0,
            reported: 0,
            writer: Arc::new(Mutex::new(Some(writer))),
            answering: None,
        }
    }

    /// The same with another line limit.
    pub fn with_max_line_bytes(mut self, max_line_bytes: usize) -> Self {
        self.lines = self.lines.with_max(max_line_bytes);
        self
    }

    /// Decodes the line read: a message, or nothing to hand on (after answering or naming it).
    fn take_line(&mut self) -> Option<ClientJsonRpcMessage> {
        let line = self.lines.line();
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let incoming = incoming::decode(line);
        let preview = match &incoming {
            Incoming::Invalid(invalid) if invalid.reply_to.is_none() => Some(preview(line)),
            _ => None,
        };
        match incoming {
            Incoming::Message(message) => Some(*message),
            Incoming::Skip => None,
            Incoming::Invalid(invalid) => {
                match preview {
                    Some(preview) => self.report(&format!(
                        "is not a JSON-RPC message (it begins {preview:?}) and was ignored: {}; toolweave reads one JSON-RPC message, a JSON object, per line",
                        invalid.message
                    )),
                    None => tracing::debug!(
                        line = self.line_number,
                        error = %invalid.message,
                        "a request that cannot be served is answered with an error"
                    ),
                }
                self.answer(&invalid);
                None
            }
        }
    }

    /// Answers a line over the limit when its id could be read, and names it on stderr.
    fn refuse_oversized(&mut self, size: usize) {
        let limit = self.lines.max();
        let reply_to = std::mem::replace(&mut self.oversized_id, Scanner::id_only()).id();
        let answered = if reply_to.is_some() {
            "answered with an error"
        } else {
            "ignored (no request id could be read from it to answer)"
        };
        tracing::warn!(
            "stdin line {} is {size} bytes, over the limit of {limit} bytes for one message, and was {answered}",
            self.line_number
        );
        self.answer(&Invalid::new(
            reply_to,
            ErrorCode::INVALID_REQUEST,
            format!(
                "the message is {size} bytes, over toolweave's limit of {} MiB ({limit} bytes) for one message; it was not read. Send less in one request.",
                limit / (1024 * 1024)
            ),
        ));
    }

    /// Writes the error answer to an invalid request, when it has someone to answer.
    fn answer(&mut self, invalid: &Invalid) {
        if invalid.reply_to.is_none() {
            return;
        }
        let mut line = invalid.answer().to_string().into_bytes();
        line.push(b'\n');
        let writer = self.writer.clone();
        // A task of its own holds the writer for the whole line, so that `receive` being
        // cancelled can never leave half a line on stdout for another message to follow.
        self.answering = Some(tokio::spawn(async move {
            let mut writer = writer.lock().await;
            let Some(writer) = writer.as_mut() else {
                return Err(closed());
            };
            writer.write_all(&line).await?;
            writer.flush().await
        }));
    }

    /// Names a line on stderr that gets no answer, the first [`REPORTED_LINES`] of them.
    fn report(&mut self, what: &str) {
        self.reported += 1;
        if self.reported > REPORTED_LINES {
            return;
        }
        let more = if self.reported == REPORTED_LINES {
            "; further lines like it are ignored without a word"
        } else {
            ""
        };
        tracing::warn!("stdin line {} {what}{more}", self.line_number);
    }
}

impl<R, W> Transport<RoleServer> for StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        let line = serde_json::to_vec(&item);
        async move {
            let mut line = line?;
            line.push(b'\n');
            let mut writer = writer.lock().await;
            let Some(writer) = writer.as_mut() else {
                return Err(closed());
            };
            writer.write_all(&line).await?;
            writer.flush().await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if let Some(answering) = &mut self.answering {
                let written = answering.await;
                self.answering = None;
                match written {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => {
                        tracing::error!(%error, "cannot write to stdout");
                        return None;
                    }
                    Err(error) => {
                        tracing::error!(%error, "writing an answer to stdout failed");
                        return None;
                    }
                }
            }
            let oversized_id = &mut self.oversized_id;
            let next = self
                .lines
                .next_showing(|piece| oversized_id.feed(piece))
                .await;
            match next {
                Ok(Next::Line) => {
                    self.line_number += 1;
                    if let Some(message) = self.take_line() {
                        return Some(message);
                    }
                }
                Ok(Next::TooLong { bytes }) => {
                    self.line_number += 1;
                    self.refuse_oversized(bytes);
                }
                // The client closed stdin (a last line without a newline is dropped, as it may
                // be cut).
                Ok(Next::End | Next::Unfinished) => return None,
                Err(error) => {
                    tracing::error!(%error, "cannot read stdin");
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.take();
        Ok(())
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the stdio transport is closed")
}

/// The first characters of a line, for a log line.
fn preview(line: &[u8]) -> String {
    let head = &line[..line.len().min(40)];
    String::from_utf8_lossy(head).trim().to_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

    use super::*;

    /// A transport over in-memory pipes; the client's ends: what it writes, what it reads.
    fn pipes(
        max_line_bytes: usize,
    ) -> (
        StdioTransport<DuplexStream, DuplexStream>,
        DuplexStream,
        BufReader<DuplexStream>,
    ) {
        let (client_out, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, client_in) = tokio::io::duplex(1 << 20);
        let transport =
            StdioTransport::new(server_in, server_out).with_max_line_bytes(max_line_bytes);
        (transport, client_out, BufReader::new(client_in))
    }

    async fn read_answer(answers: &mut BufReader<DuplexStream>) -> Value {
        let mut line = String::new();
        answers.read_line(&mut line).await.unwrap();
        serde_json::from_str(&line).unwrap()
    }

    fn id_of(message: &ClientJsonRpcMessage) -> Value {
        match message {
            ClientJsonRpcMessage::Request(request) => serde_json::to_value(&request.id).unwrap(),
            other => panic!("not a request: {other:?}"),
        }
    }

    /// Each request that cannot be served is answered in turn, and the ones that can are handed
    /// on; a line over the limit is answered at its id, whether it comes first or last.
    #[tokio::test]
    async fn every_request_gets_an_answer() {
        let (mut transport, mut client, mut answers) = pipes(200);
        let long = "x".repeat(300);
        let input = format!(
            concat!(
                "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":[1,2]}}\n",
                "{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}}\n",
                "{{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{{\"x\":\"{long}\"}}}}\n",
                "{{\"method\":\"ping\",\"params\":{{\"x\":\"{long}\"}},\"jsonrpc\":\"2.0\",\"id\":\"four\"}}\r\n",
                "{{\"params\":{{\"x\":\"{long}\"}}}}\n",
                "not json at all\n",
                "{{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}}\n",
            ),
            long = long
        );
        client.write_all(input.as_bytes()).await.unwrap();
        let first = transport.receive().await.unwrap();
        assert_eq!(id_of(&first), json!(2));
        let answer = read_answer(&mut answers).await;
        assert_eq!(answer["id"], 1);
        assert_eq!(answer["error"]["code"], -32602);
        let fifth = transport.receive().await.unwrap();
        assert_eq!(id_of(&fifth), json!(5));
        for id in [json!(3), json!("four")] {
            let answer = read_answer(&mut answers).await;
            assert_eq!(answer["id"], id);
            assert_eq!(answer["error"]["code"], -32600);
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(
                message.contains("over toolweave's limit of 0 MiB (200 bytes)"),
                "{message}"
            );
        }
        assert_eq!(transport.line_number, 7);
        // The line that is not JSON was named on stderr, not answered.
        assert_eq!(transport.reported, 1);
        drop(client);
        assert!(transport.receive().await.is_none());
    }

    /// The limit is on the message: one exactly that long is read, one a byte longer is not.
    #[tokio::test]
    async fn the_limit_counts_the_message_not_its_newline() {
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let longer = r#"{"jsonrpc":"2.0","id":22,"method":"ping"}"#;
        let (mut transport, mut client, mut answers) = pipes(ping.len());
        client
            .write_all(format!("{ping}\n{longer}\n").as_bytes())
            .await
            .unwrap();
        drop(client);
        assert_eq!(id_of(&transport.receive().await.unwrap()), json!(1));
        assert!(transport.receive().await.is_none());
        let answer = read_answer(&mut answers).await;
        assert_eq!(answer["id"], 22);
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("the message is {} bytes", longer.len())),
            "{message}"
        );
    }

    /// A line that arrives in pieces (as reads of a pipe do) is one line.
    #[tokio::test]
    async fn a_line_in_pieces_is_one_message() {
        let (mut transport, mut client, _answers) = pipes(MAX_LINE_BYTES);
        let reading = tokio::spawn(async move {
            let message = transport.receive().await;
            (message, transport)
        });
        for piece in [
            "{\"jsonrpc\":\"2.0\",",
            "\"id\":9,\"method\"",
            ":\"ping\"}",
            "\n",
        ] {
            client.write_all(piece.as_bytes()).await.unwrap();
            tokio::task::yield_now().await;
        }
        let (message, _transport) = reading.await.unwrap();
        assert_eq!(id_of(&message.unwrap()), json!(9));
    }

    /// What the service sends goes out one message per line.
    #[tokio::test]
    async fn sends_lines() {
        let (mut transport, _client, mut answers) = pipes(MAX_LINE_BYTES);
        let message = ServerJsonRpcMessage::error(
            rmcp::ErrorData::invalid_params("no", None),
            Some(rmcp::model::NumberOrString::Number(4)),
        );
        transport.send(message).await.unwrap();
        let answer = read_answer(&mut answers).await;
        assert_eq!(answer["id"], 4);
        transport.close().await.unwrap();
        let message =
            ServerJsonRpcMessage::error(rmcp::ErrorData::invalid_params("no", None), None);
        assert_eq!(
            transport.send(message).await.unwrap_err().kind(),
            io::ErrorKind::NotConnected
        );
    }
}
