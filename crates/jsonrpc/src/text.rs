//! Text cut to a number of bytes without splitting a character.
//!
//! Every bound toolweave puts on text it shows (an error message, a preview, the tail of a
//! process's stderr) counts bytes, and a cut may only fall between two characters: these are the
//! only places that look for where.

/// The start of `text`, at most `max` bytes of it, ending on a character boundary.
pub fn head(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}

/// The end of `text`, at most `max` bytes of it, starting on a character boundary.
pub fn tail(text: &str, max: usize) -> &str {
    &text[text.ceil_char_boundary(text.len().saturating_sub(max))..]
}

/// Cuts `text` to at most `max` bytes on a character boundary; whether it was longer.
pub fn truncate(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    text.truncate(text.floor_char_boundary(max));
    true
}

/// `text` cut to at most `max` bytes on a character boundary, with `mark` after the cut when
/// there was one.
pub fn cut_marked(mut text: String, max: usize, mark: &str) -> String {
    if truncate(&mut text, max) {
        text.push_str(mark);
    }
    text
}

/// Drops the start of `text` so that at most `max` bytes are left, on a character boundary.
pub fn keep_end(text: &mut String, max: usize) {
    let start = text.ceil_char_boundary(text.len().saturating_sub(max));
    text.drain(..start);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_between_characters() {
        // "é" is two bytes, "😀" four.
        let text = "aé😀b";
        assert_eq!(head(text, 0), "");
        assert_eq!(head(text, 2), "a");
        assert_eq!(head(text, 3), "aé");
        assert_eq!(head(text, 6), "aé");
        assert_eq!(head(text, 7), "aé😀");
        assert_eq!(head(text, 100), text);
        assert_eq!(tail(text, 1), "b");
        assert_eq!(tail(text, 4), "b");
        assert_eq!(tail(text, 5), "😀b");
        assert_eq!(tail(text, 100), text);

        let mut owned = text.to_owned();
        assert!(!truncate(&mut owned, 8));
        assert!(truncate(&mut owned, 5));
        assert_eq!(owned, "aé");
        assert_eq!(cut_marked("aé😀b".into(), 4, "… (cut)"), "aé… (cut)");
        assert_eq!(cut_marked("short".into(), 5, "… (cut)"), "short");

        let mut owned = text.to_owned();
        keep_end(&mut owned, 6);
        assert_eq!(owned, "😀b");
        keep_end(&mut owned, 100);
        assert_eq!(owned, "😀b");
    }
}
