//! The MCP transport of a stdio server: one JSON-RPC message per line, each line read as bytes
//! and checked by the connection's [`Wire`] before rmcp sees it.
//!
//! It stands where rmcp's `AsyncRwTransport` would, which parses lines itself and drops what it
//! cannot parse. Lines are read from [`BoundedLines`] (which bounds their length and notes lines
//! that are not messages); a line that does not start like a message is skipped here, since the
//! reader has already reported it.

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;

use crate::bounded::BoundedLines;
use crate::wire::{Reader, Wire};

/// Reads messages from `R` (a server's stdout) and writes them to `W` (its stdin).
pub(crate) struct LineTransport<R, W> {
    /// Lines of the server's stdout; the one being read is kept across reads, since rmcp may
    /// drop a read to do something else and read again.
    reader: BoundedLines<R>,
    /// Reads lines, long ones elsewhere; kept across reads like `line`.
    reader_of_lines: Reader,
    /// `None` once closed. A lock, since rmcp may have several writes in flight.
    writer: Arc<Mutex<Option<W>>>,
    wire: Arc<Wire>,
}

impl<R: AsyncRead + Unpin, W> LineTransport<R, W> {
    /// A transport over `reader` and `writer`, reporting to `wire`.
    pub(crate) fn new(reader: BoundedLines<R>, writer: W, wire: Arc<Wire>) -> Self {
        Self {
            reader,
            reader_of_lines: Reader::default(),
            writer: Arc::new(Mutex::new(Some(writer))),
            wire,
        }
    }
}

impl<R, W> Transport<RoleClient> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.wire.sending(&item);
        let writer = self.writer.clone();
        let wire = self.wire.clone();
        async move {
            let mut line = serde_json::to_vec(&item)?;
            line.push(b'\n');
            let mut writer = writer.lock().await;
            let Some(writer) = writer.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the connection is closed",
                ));
            };
            writer.write_all(&line).await?;
            writer.flush().await?;
            wire.written(&item);
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        if let Some(message) = self.reader_of_lines.unfinished().await {
            return Some(message);
        }
        loop {
            match self.reader.next().await {
                Ok(true) => {}
                // The end of the stream.
                Ok(false) => return None,
                Err(error) => {
                    // A line past the bound, or the pipe failed: the connection ends, and the
                    // process reports why.
                    tracing::debug!(%error, "reading the server's stdout failed");
                    return None;
                }
            }
            let received = self
                .reader_of_lines
                .read(&self.wire, self.reader.line(), judge)
                .await;
            // A large result's bytes are read: hand them back now rather than hold them for the
            // connection's life (nor while the result goes on to the code).
            self.reader.forget_line();
            if received.is_some() {
                return received;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.writer.lock().await.take());
        Ok(())
    }
}

/// The message on one line, if it holds one rmcp should see.
fn judge(wire: &Wire, line: &[u8]) -> Option<ServerJsonRpcMessage> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // Blank lines, and lines that are not messages (which `BoundedLines` reported), are
    // skipped: a message starts with `{` or `[`, after blanks or a byte order mark.
    let start = line
        .iter()
        .position(|byte| !byte.is_ascii_whitespace() && !matches!(byte, 0xEF | 0xBB | 0xBF))?;
    if !matches!(line[start], b'{' | b'[') {
        return None;
    }
    wire.receive(&line[start..])
        .map(|received| received.message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounded::StdoutFindings;
    use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, RequestId};

    #[tokio::test]
    async fn lines_are_read_whole_and_checked() {
        let wire = Wire::new("test");
        let request = ClientJsonRpcMessage::request(
            ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new("t"))),
            RequestId::Number(1),
        );
        let input: &[u8] = b"Listening on 3000\n\n{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\r\n";
        let reader = BoundedLines::new(input, 1024, "test", Arc::new(StdoutFindings::default()));
        let (writer, mut server_side) = tokio::io::duplex(4096);
        let mut transport = LineTransport::new(reader, writer, wire.clone());
        transport.send(request).await.unwrap();
        let message = transport.receive().await.unwrap();
        assert!(matches!(
            message,
            ServerJsonRpcMessage::Response(ref response) if response.id == RequestId::Number(1)
        ));
        assert!(transport.receive().await.is_none());
        drop(transport);
        let mut line = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut server_side, &mut line)
            .await
            .unwrap();
        assert!(
            line.ends_with("}\n") && line.contains("\"tools/call\""),
            "{line}"
        );
        // The answer with the id "1" was dropped and counted.
        assert_eq!(wire.untied().unwrap().0, 1);
    }

    /// A line long enough to be read on a blocking thread arrives whole, and a read dropped
    /// while it was being read hands its message to the next read.
    #[tokio::test]
    async fn a_long_line_read_elsewhere_survives_a_dropped_read() {
        let wire = Wire::new("test");
        let request = ClientJsonRpcMessage::request(
            ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new("t"))),
            RequestId::Number(1),
        );
        let text = "x".repeat(3 << 20);
        let input = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}}}}\n"
        );
        let reader = BoundedLines::new(
            std::io::Cursor::new(input.into_bytes()),
            8 << 20,
            "test",
            Arc::new(StdoutFindings::default()),
        );
        let (writer, _server_side) = tokio::io::duplex(4096);
        let mut transport = LineTransport::new(reader, writer, wire);
        transport.send(request).await.unwrap();
        // Dropped at its first wait: the line is read by then and its reading has begun.
        {
            let mut receiving = std::pin::pin!(transport.receive());
            let polled = futures::poll!(receiving.as_mut());
            assert!(polled.is_pending(), "read at once, not elsewhere");
        }
        let message = transport.receive().await.unwrap();
        let ServerJsonRpcMessage::Response(response) = message else {
            panic!("not the answer: {message:?}");
        };
        let rmcp::model::ServerResult::CallToolResult(result) = response.result else {
            panic!("not a tool result: {:?}", response.result);
        };
        let item = result.content[0].as_text().expect("a text item");
        assert_eq!(item.text.len(), text.len());
        assert!(transport.receive().await.is_none());
    }
}
