//! Lines of bytes read by a blocking reader (a worker's stdin), each bounded, each parsed as it
//! is taken.

/// Bytes read by whoever reads (a blocking `read` of a worker's stdin), cut into lines: the
/// blocking counterpart of [`LineReader`](crate::reader::LineReader). Each byte is looked at once however a line
/// arrives (a long one comes in many reads), and a line longer than the reader allows is refused
/// as soon as that many bytes are in, not once it ends.
#[derive(Debug, Default)]
pub struct LineBuffer {
    bytes: Vec<u8>,
    /// Where the next line starts.
    start: usize,
    /// From `start` to here, the bytes hold no line end.
    scanned: usize,
}

/// Why a line is not a message.
#[derive(Debug)]
pub enum LineError {
    /// It is longer than allowed: at least this long.
    TooLong(usize),
    /// It is not a message.
    Unreadable(serde_json::Error),
}

/// A buffer that grew this large for a long line is let go once that line is read, so a job's
/// memory does not keep holding it.
const KEPT_LINE_CAPACITY: usize = 256 * 1024;

impl LineBuffer {
    /// Whether it holds no byte of a line not yet taken.
    pub fn is_empty(&self) -> bool {
        self.start == self.bytes.len()
    }

    /// Adds bytes read.
    pub fn extend(&mut self, read: &[u8]) {
        if self.start > 0 {
            // Only the start of the next line moves: the lines before it were taken.
            self.bytes.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        self.bytes.extend_from_slice(read);
    }

    /// The next whole line, parsed, if one is there and it is at most `max` bytes long.
    pub fn take<T: serde::de::DeserializeOwned>(
        &mut self,
        max: usize,
    ) -> Result<Option<T>, LineError> {
        let Some(at) = memchr::memchr(b'\n', &self.bytes[self.scanned..]) else {
            self.scanned = self.bytes.len();
            let partial = self.bytes.len() - self.start;
            return if partial > max {
                Err(LineError::TooLong(partial))
            } else {
                Ok(None)
            };
        };
        let (start, end) = (self.start, self.scanned + at);
        if end - start > max {
            return Err(LineError::TooLong(end - start));
        }
        let parsed = serde_json::from_slice(&self.bytes[start..end]);
        self.start = end + 1;
        self.scanned = self.start;
        if self.start == self.bytes.len() {
            self.bytes.clear();
            self.start = 0;
            self.scanned = 0;
            if self.bytes.capacity() > KEPT_LINE_CAPACITY {
                self.bytes = Vec::new();
            }
        }
        parsed.map(Some).map_err(LineError::Unreadable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(lines: &mut LineBuffer, max: usize) -> Vec<u64> {
        let mut taken = Vec::new();
        while let Some(number) = lines.take::<u64>(max).unwrap() {
            taken.push(number);
        }
        taken
    }

    #[test]
    fn lines_are_taken_whole_however_they_arrive() {
        let mut lines = LineBuffer::default();
        lines.extend(b"1\n22\n33");
        assert_eq!(numbers(&mut lines, 10), [1, 22]);
        lines.extend(b"3");
        assert!(numbers(&mut lines, 10).is_empty());
        lines.extend(b"\n4444\n");
        assert_eq!(numbers(&mut lines, 10), [333, 4444]);
        assert!(lines.is_empty());
        // A line arriving a byte at a time.
        for byte in b"123456789\n" {
            lines.extend(&[*byte]);
        }
        assert_eq!(numbers(&mut lines, 10), [123_456_789]);
    }

    #[test]
    fn a_line_longer_than_allowed_is_refused_before_it_ends() {
        let mut lines = LineBuffer::default();
        lines.extend(b"12345");
        assert!(matches!(lines.take::<u64>(5), Ok(None)));
        lines.extend(b"6");
        assert!(matches!(lines.take::<u64>(5), Err(LineError::TooLong(6))));
        // At the limit it is taken, one past it is not.
        let mut lines = LineBuffer::default();
        lines.extend(b"12345\n123456\n");
        assert!(matches!(lines.take::<u64>(5), Ok(Some(12345))));
        assert!(matches!(lines.take::<u64>(5), Err(LineError::TooLong(6))));
    }

    #[test]
    fn a_line_that_is_not_a_message_is_taken_and_named() {
        let mut lines = LineBuffer::default();
        lines.extend(b"{not json\n7\n");
        assert!(matches!(
            lines.take::<u64>(100),
            Err(LineError::Unreadable(_))
        ));
        assert!(matches!(lines.take::<u64>(100), Ok(Some(7))));
    }

    #[test]
    fn the_buffer_of_a_long_line_is_let_go_once_it_is_read() {
        let mut lines = LineBuffer::default();
        let long = format!("\"{}\"\n", "x".repeat(KEPT_LINE_CAPACITY * 2));
        for piece in long.as_bytes().chunks(64 * 1024) {
            lines.extend(piece);
        }
        let text = lines.take::<String>(usize::MAX).unwrap().unwrap();
        assert_eq!(text.len(), KEPT_LINE_CAPACITY * 2);
        assert_eq!(lines.bytes.capacity(), 0);
    }
}
