//! An upstream's stderr: every line logged (debug, with the server's name), the last few kept.
//!
//! The kept tail goes into the error a failed start or a crash reports: it is usually the one line
//! that says what is wrong (a missing token, a bad argument). It is bounded in lines and bytes so a
//! chatty server costs nothing. Lines are read, cut and kept by `toolweave_jsonrpc`.

use tokio::io::AsyncRead;
use toolweave_jsonrpc::reader::for_each_line;
pub(crate) use toolweave_jsonrpc::tail::StderrTail;

/// Lines kept.
const MAX_LINES: usize = 20;
/// Bytes kept, all lines together.
const MAX_BYTES: usize = 4096;
/// Bytes kept of one line; the rest of a longer line is dropped.
const MAX_LINE_BYTES: usize = 512;

/// An empty tail with an upstream's bounds: whole lines, [`MAX_LINES`] and [`MAX_BYTES`] of them.
pub(crate) fn tail() -> StderrTail {
    StderrTail::whole_lines(MAX_LINES, MAX_BYTES)
}

/// Reads `stream` to its end: logs each line at debug level and keeps the tail.
pub(crate) async fn read_lines(server: String, stream: impl AsyncRead + Unpin, tail: StderrTail) {
    // A line is cut at MAX_LINE_BYTES; reading goes on to its newline without keeping more.
    let read = for_each_line(stream, MAX_LINE_BYTES, "", |line| {
        let text = line.trim_end();
        if text.is_empty() {
            return;
        }
        tracing::debug!(target: "toolweave::upstream::stderr", server = %server, "{text}");
        tail.push(text);
    })
    .await;
    if let Err(error) = read {
        tracing::debug!(server = %server, %error, "reading the server's stderr failed");
    }
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
        let tail = tail();
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
        let tail = tail();
        for _ in 0..12 {
            tail.push(&"z".repeat(500));
        }
        assert!(tail.text().len() <= MAX_BYTES, "{}", tail.text().len());
        assert_eq!(tail.text().lines().count(), 8);
    }
}
