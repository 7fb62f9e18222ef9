//! The tail of what a child process wrote to stderr: the last lines, bounded, for the error that
//! reports its failed start, its crash or its end.
//!
//! The kept tail is usually the one line that says what is wrong (a missing token, a bad
//! argument). It is bounded in lines and bytes, so a chatty process costs nothing; lines are cut
//! on their way in by [`crate::reader::for_each_line`], which hands them to [`StderrTail::push`].

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

/// The last lines a process wrote to stderr. Cheap to clone: clones share the lines.
#[derive(Debug, Clone)]
pub struct StderrTail {
    kept: Arc<Mutex<Kept>>,
}

#[derive(Debug)]
struct Kept {
    lines: VecDeque<String>,
    /// Bytes of the lines, without the newlines between them.
    bytes: usize,
    max_lines: usize,
    max_bytes: usize,
    /// Whether only whole lines are kept, or the last `max_bytes` of the text.
    whole_lines: bool,
}

impl StderrTail {
    /// Keeps the last `max_lines` whole lines, fewer when they come to more than `max_bytes`
    /// (not counting newlines; the last line is kept whatever its length).
    pub fn whole_lines(max_lines: usize, max_bytes: usize) -> Self {
        Self::with(max_lines, max_bytes, true)
    }

    /// Keeps the last `max_bytes` of the text, newlines included: the oldest line kept may have
    /// lost its start (on a character boundary).
    pub fn last_bytes(max_bytes: usize) -> Self {
        Self::with(usize::MAX, max_bytes, false)
    }

    fn with(max_lines: usize, max_bytes: usize, whole_lines: bool) -> Self {
        Self {
            kept: Arc::new(Mutex::new(Kept {
                lines: VecDeque::new(),
                bytes: 0,
                max_lines,
                max_bytes,
                whole_lines,
            })),
        }
    }

    /// Keeps one line, dropping the oldest over the bounds.
    pub fn push(&self, line: &str) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.bytes += line.len();
        kept.lines.push_back(line.to_owned());
        while kept.lines.len() > kept.max_lines
            || (kept.whole_lines && kept.bytes > kept.max_bytes && kept.lines.len() > 1)
        {
            kept.drop_oldest();
        }
        if !kept.whole_lines {
            kept.keep_last_bytes();
        }
    }

    /// The kept lines, oldest first, joined by newlines.
    pub fn text(&self) -> String {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Kept {
    fn drop_oldest(&mut self) {
        if let Some(oldest) = self.lines.pop_front() {
            self.bytes -= oldest.len();
        }
    }

    /// Drops lines, and the start of the oldest, until the text is at most `max_bytes` long.
    fn keep_last_bytes(&mut self) {
        let text = self.bytes + self.lines.len().saturating_sub(1);
        let mut excess = text.saturating_sub(self.max_bytes);
        while excess > 0 {
            let more = self.lines.len() > 1;
            let Some(oldest) = self.lines.front_mut() else {
                return;
            };
            if oldest.len() < excess && more {
                // The line and the newline after it.
                excess -= oldest.len() + 1;
                self.drop_oldest();
                continue;
            }
            let before = oldest.len();
            crate::text::keep_end(oldest, before.saturating_sub(excess));
            self.bytes -= before - oldest.len();
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX_LINES: usize = 20;
    const MAX_BYTES: usize = 4096;

    #[test]
    fn drops_old_lines_over_the_byte_bound() {
        let tail = StderrTail::whole_lines(MAX_LINES, MAX_BYTES);
        for _ in 0..12 {
            tail.push(&"z".repeat(500));
        }
        assert!(tail.text().len() <= MAX_BYTES, "{}", tail.text().len());
        assert_eq!(tail.text().lines().count(), 8);
    }

    #[test]
    fn the_last_bytes_are_kept_on_a_character_boundary() {
        let tail = StderrTail::last_bytes(10);
        tail.push("first");
        tail.push("second");
        assert_eq!(tail.text(), "rst\nsecond");
        tail.push("é😀");
        // "rst\nsecond\né😀" is 17 bytes: "rst" goes, and the cut falls inside "second".
        assert_eq!(tail.text(), "ond\né😀");
        tail.push("xx");
        // 3 bytes too many: all of "ond", the newline after it stays.
        assert_eq!(tail.text(), "\né😀\nxx");
        // A cut inside a character moves past it.
        let tail = StderrTail::last_bytes(8);
        tail.push("é😀");
        tail.push("xx");
        assert_eq!(tail.text(), "😀\nxx");
        // Within the bound, lines stay whole; a line alone is cut too.
        let tail = StderrTail::whole_lines(3, 100);
        for line in ["1", "2", "3", "4"] {
            tail.push(line);
        }
        assert_eq!(tail.text(), "2\n3\n4");
        let tail = StderrTail::last_bytes(4);
        tail.push("a");
        tail.push("0123456789");
        assert_eq!(tail.text(), "6789");
    }
}
