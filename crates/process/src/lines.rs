//! What a child process (a worker, the fork server, a runner) writes to stderr, read line by
//! line with each line bounded, however the process writes.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// How much of one line a worker or fork server writes to stderr is kept; the rest is cut.
pub const STDERR_LINE_BYTES: usize = 4096;

/// Reads `stream` to its end and hands `each` one line at a time, cut to `max_line` bytes (and
/// marked so) when longer: however a process writes, what is held is a line and one read.
pub async fn for_each_line(
    stream: impl AsyncRead + Unpin,
    max_line: usize,
    mut each: impl FnMut(&str),
) {
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    let mut cut = false;
    let mut hand_on = |line: &mut Vec<u8>, cut: &mut bool| {
        let mut text = String::from_utf8_lossy(line).into_owned();
        if std::mem::take(cut) {
            text.push_str("… (cut)");
        }
        each(&text);
        line.clear();
    };
    loop {
        let available = match reader.fill_buf().await {
            Ok(available) if !available.is_empty() => available,
            _ => break,
        };
        let end = memchr::memchr(b'\n', available);
        let piece = &available[..end.unwrap_or(available.len())];
        let room = max_line.saturating_sub(line.len());
        line.extend_from_slice(&piece[..piece.len().min(room)]);
        cut |= piece.len() > room;
        let used = end.map_or(available.len(), |end| end + 1);
        reader.consume(used);
        if end.is_some() {
            hand_on(&mut line, &mut cut);
        }
    }
    if !line.is_empty() || cut {
        hand_on(&mut line, &mut cut);
    }
}
