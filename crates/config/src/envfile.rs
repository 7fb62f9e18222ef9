//! The `envFile` of a stdio server entry (VS Code and Cursor): a file of `NAME=value` lines whose
//! variables the server gets, as those editors read it.
//!
//! The format is the one of dotenv files, without expansion (the editors pass `$` on as
//! written): blank lines and lines starting with `#` are skipped; `export ` before a name is
//! allowed; a value may be unquoted (up to a `#`, trimmed), or in single, double or back quotes,
//! which may span lines; in double quotes `\n` and `\r` stand for line breaks. A later line for
//! the same name wins. A line that is none of these is an error naming the line, where the
//! editors would skip it silently: a server that starts without a variable it needs fails far
//! from the cause.

use std::path::Path;

/// The variables of the env file at `path`, in the order written, or what is wrong with it.
pub(crate) fn read(path: &Path) -> Result<Vec<(String, String)>, String> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        format!(
            "cannot read its \"envFile\" {}: {error}; create the file or fix the path (a relative path is taken from the config file's folder)",
            path.display()
        )
    })?;
    parse(&text).map_err(|(line, message)| {
        format!(
            "its \"envFile\" {}, line {line}: {message}; each line is NAME=value, # starts a comment",
            path.display()
        )
    })
}

/// The variables of an env file's text; an error names the line (from 1) and what is wrong.
fn parse(text: &str) -> Result<Vec<(String, String)>, (usize, String)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut variables: Vec<(String, String)> = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let number = index + 1;
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        // The line itself is never shown: it may be a secret pasted without a name.
        let Some((name, rest)) = line.split_once('=') else {
            return Err((number, "the line has no \"=\"".to_owned()));
        };
        let name = name.trim_end();
        let valid_name = !name.is_empty()
            && name
                .chars()
                .all(|character| character.is_ascii_alphanumeric() || "_.-".contains(character));
        if !valid_name {
            return Err((
                number,
                "the text before \"=\" is not a variable name (letters, digits, _ . - only)"
                    .to_owned(),
            ));
        }
        let rest = rest.trim_start();
        let value = match rest.chars().next() {
            Some(quote @ ('"' | '\'' | '`')) => {
                // The closing quote may be on a later line.
                let mut quoted = rest[1..].to_owned();
                let (inner, after) = loop {
                    if let Some(end) = quoted.find(quote) {
                        let after = quoted[end + 1..].to_owned();
                        quoted.truncate(end);
                        break (quoted, after);
                    }
                    match lines.next() {
                        Some((_, next)) => {
                            quoted.push('\n');
                            quoted.push_str(next);
                        }
                        None => {
                            return Err((
                                number,
                                format!(
                                    "the value of {name} opens a {quote} quote that never closes"
                                ),
                            ));
                        }
                    }
                };
                let after = after.trim_start();
                if !(after.is_empty() || after.starts_with('#')) {
                    return Err((
                        number,
                        format!("the value of {name} goes on after its closing {quote} quote"),
                    ));
                }
                if quote == '"' {
                    inner.replace("\\n", "\n").replace("\\r", "\r")
                } else {
                    inner
                }
            }
            _ => rest
                .split_once('#')
                .map_or(rest, |(value, _)| value)
                .trim_end()
                .to_owned(),
        };
        variables.retain(|(known, _)| known != name);
        variables.push((name.to_owned(), value));
    }
    Ok(variables)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Vec<(String, String)> {
        parse(text).unwrap()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[test]
    fn reads_the_lines_editors_read() {
        let text = "\u{feff}# tokens\n\nGITHUB_TOKEN=ghp_abc\n  export REGION = eu-west-1  # where\nEMPTY=\nURL=https://x.test/a#b\nSPACED=  two words  \ndots.and-dashes=1\n";
        assert_eq!(
            parsed(text),
            pairs(&[
                ("GITHUB_TOKEN", "ghp_abc"),
                ("REGION", "eu-west-1"),
                ("EMPTY", ""),
                ("URL", "https://x.test/a"),
                ("SPACED", "two words"),
                ("dots.and-dashes", "1"),
            ])
        );
    }

    #[test]
    fn quotes_keep_what_is_inside_and_may_span_lines() {
        let text = "A='single # not a comment'\nB=\"line\\none\"  # comment\nC=`back`\nD=\"first\nsecond\"\nE='$NOT_EXPANDED'\nF=\"a \\\\n b\"\n";
        assert_eq!(
            parsed(text),
            pairs(&[
                ("A", "single # not a comment"),
                ("B", "line\none"),
                ("C", "back"),
                ("D", "first\nsecond"),
                ("E", "$NOT_EXPANDED"),
                ("F", "a \\\n b"),
            ])
        );
    }

    #[test]
    fn a_later_line_wins() {
        assert_eq!(parsed("A=1\nB=2\nA=3\n"), pairs(&[("B", "2"), ("A", "3")]));
    }

    #[test]
    fn mistakes_name_the_line() {
        for (text, line, says) in [
            ("A=1\nnot a variable\n", 2, "the line has no \"=\""),
            ("A=1\n\n$B=2\n", 3, "is not a variable name"),
            ("=2\n", 1, "is not a variable name"),
            ("A=\"open\nB=2\n", 1, "never closes"),
            ("A='x' y\n", 1, "goes on after its closing"),
        ] {
            let (number, message) = parse(text).unwrap_err();
            assert_eq!(number, line, "{text:?}: {message}");
            assert!(message.contains(says), "{text:?}: {message}");
        }
    }

    #[test]
    fn a_missing_file_says_what_to_do() {
        let message = read(Path::new("/nonexistent/toolweave/.env")).unwrap_err();
        assert!(message.contains("/nonexistent/toolweave/.env"), "{message}");
        assert!(
            message.contains("create the file or fix the path"),
            "{message}"
        );
    }
}
