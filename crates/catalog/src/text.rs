//! Words for search and suggestions: splitting names and prose, light stemming, stop words, a
//! small table of verbs that mean the same to someone looking for a tool, and a table of the
//! words people use for what tools call otherwise.

/// Words too common to say anything about which tool is meant.
const STOP_WORDS: &[&str] = &[
    "a", "all", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "for", "from",
    "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "please",
    "so", "some", "that", "the", "their", "then", "this", "to", "via", "want", "we", "what",
    "which", "will", "with", "you", "your",
    // What is left of a contraction split at its apostrophe: `what's`, `don't`, `I'm`, `we've`.
    "s", "t", "m", "re", "ve", "ll", "d",
];

/// Words a searcher uses interchangeably. A word may sit in several groups; expansion takes the
/// union. Written unstemmed; compared stemmed.
const SYNONYMS: &[&[&str]] = &[
    &["add", "sum", "plus", "total", "addition"],
    &["subtract", "minus", "difference"],
    &["multiply", "product", "times"],
    &[
        "remove", "delete", "drop", "erase", "destroy", "unlink", "clear",
    ],
    &[
        "find", "search", "query", "lookup", "locate", "filter", "match",
    ],
    &["make", "create", "new", "generate", "build"],
    &["get", "read", "fetch", "retrieve", "load", "obtain"],
    &["get", "list", "enumerate", "show"],
    &["open", "view", "read"],
    &["write", "save", "store", "put", "persist"],
    &[
        "update", "edit", "modify", "change", "patch", "replace", "set",
    ],
    &[
        "run", "execute", "exec", "invoke", "call", "trigger", "start", "launch",
    ],
    &["stop", "cancel", "kill", "abort", "terminate"],
    &["move", "rename", "relocate"],
    &["copy", "duplicate", "clone"],
    &["send", "post", "submit", "publish"],
    &["directory", "dir", "folder"],
    &["image", "picture", "photo", "img"],
    &[
        "info",
        "information",
        "metadata",
        "detail",
        "stat",
        "status",
    ],
    &["issue", "ticket", "bug"],
    &["repository", "repo"],
    &["environment", "env"],
    &["compress", "zip", "gzip", "archive"],
    &["wait", "sleep", "delay"],
    &["log", "logging"],
    &["echo", "repeat"],
];

/// The words people use for what tools do, and the words tools use for it: a query word on the
/// left also finds the words on the right, at less weight than a synonym (the bridge goes one
/// way: a tool that says `entity` is not found by every query that says `entity`'s neighbours).
/// Written unstemmed; compared stemmed.
const RELATED: &[(&[&str], &[&str])] = &[
    // Memory: what a person asks a memory to keep, and what a knowledge graph calls it.
    (
        &[
            "remember", "memorize", "memorise", "recall", "forget", "memory", "know",
        ],
        &["memory", "knowledge", "graph", "entity", "observation"],
    ),
    (&["note", "fact", "detail"], &["observation", "entity"]),
    (
        &[
            "person",
            "people",
            "someone",
            "somebody",
            "contact",
            "company",
            "organization",
            "thing",
        ],
        &["entity", "node"],
    ),
    (
        &[
            "relationship",
            "link",
            "connect",
            "connection",
            "colleague",
            "associate",
            "manage",
        ],
        &["relation"],
    ),
    (&["forget"], &["delete"]),
    (
        &["save", "store", "keep", "record"],
        &["observation", "memory"],
    ),
    // The web.
    (
        &[
            "download", "scrape", "crawl", "http", "https", "website", "webpage", "web", "online",
            "internet", "url",
        ],
        &["fetch", "url", "internet"],
    ),
    (
        &["visit", "browse", "go", "goto", "website", "site"],
        &["navigate", "url"],
    ),
    (&["browser", "website", "site", "tab"], &["page", "browser"]),
    // Databases.
    (
        &[
            "database", "db", "sql", "table", "row", "record", "select", "count",
        ],
        &["query", "sql", "database", "table"],
    ),
    (&["insert", "record", "row"], &["write"]),
    (&["postgresql", "pg", "psql"], &["postgres"]),
    (&["sqlite3"], &["sqlite"]),
    (&["column", "field", "structure"], &["schema", "describe"]),
    // Time.
    (
        &["date", "today", "now", "clock", "zone", "tz", "hour"],
        &["time", "current", "timezone"],
    ),
    // Version control.
    (
        &[
            "changed",
            "change",
            "modified",
            "uncommitted",
            "dirty",
            "pending",
        ],
        &["status", "diff", "unstaged"],
    ),
    (
        &["history", "recent", "last", "previous", "who"],
        &["log", "commit"],
    ),
    (&["compare", "difference", "differ", "changed"], &["diff"]),
    (&["stage"], &["add", "staging"]),
    (&["unstage", "undo"], &["reset"]),
    (&["switch"], &["checkout"]),
    (&["pr", "prs"], &["pull", "request"]),
    (&["approve", "approval", "feedback"], &["review"]),
    (&["open", "report", "raise"], &["create"]),
    (&["ci", "check", "build", "pass", "fail"], &["status"]),
    (
        &["close", "reopen", "label", "assign"],
        &["update", "state"],
    ),
    // Caches and key-value stores.
    (
        &["cache", "kv", "ttl", "expire", "expiry", "expires"],
        &["redis", "key", "value", "expiration"],
    ),
    // Browsers.
    (&["button", "tap"], &["click"]),
    (
        &["keyboard", "keystroke", "hotkey", "enter", "escape", "tab"],
        &["press", "key"],
    ),
    (&["error", "log", "warning"], &["console", "message"]),
    (
        &["alert", "popup", "confirm", "prompt", "modal"],
        &["dialog"],
    ),
    (
        &[
            "dark", "light", "theme", "scheme", "colour", "color", "print",
        ],
        &["media", "emulate"],
    ),
    (
        &["javascript", "js", "script"],
        &["evaluate", "javascript", "code"],
    ),
    (
        &["dropdown", "combobox", "choose", "pick"],
        &["select", "option"],
    ),
    (
        &["accessibility", "a11y", "aria", "dom", "tree", "structure"],
        &["snapshot", "accessibility"],
    ),
    (
        &["traffic", "xhr", "header", "response"],
        &["network", "request"],
    ),
    (&["capture", "screen", "picture"], &["screenshot"]),
    (&["login", "field", "input"], &["form", "fill", "type"]),
    (&["appear", "disappear", "until"], &["wait"]),
    // Files.
    (&["disk", "local", "path"], &["file"]),
    (
        &[
            "size",
            "big",
            "large",
            "permission",
            "modified",
            "created",
            "timestamp",
            "owner",
        ],
        &["info", "size", "metadata"],
    ),
    (
        &[
            "recursive",
            "recursively",
            "structure",
            "hierarchy",
            "nested",
        ],
        &["tree"],
    ),
    (
        &["glob", "wildcard", "named", "pattern"],
        &["search", "pattern"],
    ),
    (&["mkdir"], &["create", "directory"]),
    (&["ls"], &["list", "directory"]),
    (&["cat", "content", "contents"], &["read", "content"]),
    (&["rm", "del"], &["delete"]),
    (&["mv"], &["move"]),
    (&["cp"], &["copy"]),
    (&["overwrite"], &["write"]),
    (&["line", "text", "change", "modify", "replace"], &["edit"]),
    (
        &["several", "multiple", "many", "batch", "once"],
        &["multiple"],
    ),
    // Reasoning.
    (
        &[
            "think",
            "reason",
            "reasoning",
            "plan",
            "step",
            "reflect",
            "revise",
            "brainstorm",
            "problem",
        ],
        &["thought", "thinking", "problem"],
    ),
    // Looking at things.
    (
        &["see", "check", "inspect", "display", "look"],
        &["show", "get", "list", "view"],
    ),
    (
        &["slow", "long", "progress"],
        &["long", "running", "progress", "operation"],
    ),
    (
        &["debug", "variable", "config", "configuration"],
        &["environment", "env"],
    ),
];

/// Lowercase words of `text`: split at anything not a letter or digit, at camelCase humps
/// (`entityType` → `entity type`, `HTMLParser` → `html parser`) and between letters and digits.
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for chunk in text.split(|c: char| !c.is_alphanumeric()) {
        let characters: Vec<char> = chunk.chars().collect();
        let mut start = 0;
        for index in 1..characters.len() {
            let previous = characters[index - 1];
            let current = characters[index];
            let next = characters.get(index + 1);
            let hump = previous.is_lowercase() && current.is_uppercase();
            let acronym_end = previous.is_uppercase()
                && current.is_uppercase()
                && next.is_some_and(|next| next.is_lowercase());
            let digit_edge = previous.is_ascii_digit() != current.is_ascii_digit();
            if hump || acronym_end || digit_edge {
                words.push(characters[start..index].iter().collect::<String>());
                start = index;
            }
        }
        if start < characters.len() {
            words.push(characters[start..].iter().collect::<String>());
        }
    }
    words
        .into_iter()
        .map(|word| word.to_lowercase())
        .filter(|word| !word.is_empty())
        .collect()
}

/// The stems of `text`'s words, without stop words.
pub(crate) fn terms(text: &str) -> Vec<String> {
    words(text)
        .iter()
        .filter(|word| !is_stop_word(word))
        .map(|word| stem(word))
        .collect()
}

/// Whether `word` (lowercase) is a stop word.
pub(crate) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

/// A light suffix-stripping stem, the same for query and index: `numbers` → `number`,
/// `creating`/`creates`/`create` → `creat`, `entities` → `entity`, `running` → `run`.
pub(crate) fn stem(word: &str) -> String {
    if !word.is_ascii() || word.len() <= 3 {
        return word.to_owned();
    }
    let mut stem = word.to_owned();
    if let Some(base) = stem.strip_suffix("ies").filter(|base| base.len() >= 2) {
        stem = format!("{base}y");
    } else if stem.ends_with("sses") {
        stem.truncate(stem.len() - 2);
    } else if stem.ends_with('s')
        && !stem.ends_with("ss")
        && !stem.ends_with("us")
        && !stem.ends_with("is")
    {
        stem.pop();
    }
    for suffix in ["ing", "ed"] {
        if let Some(base) = stem.strip_suffix(suffix).filter(|base| base.len() >= 3) {
            stem = undouble(base);
            break;
        }
    }
    if stem.len() > 3 && stem.ends_with('e') {
        stem.pop();
    }
    stem
}

/// `runn` → `run`, `stopp` → `stop`; `fill`, `pass` and `buzz` keep their double letter.
fn undouble(base: &str) -> String {
    let bytes = base.as_bytes();
    match bytes {
        [.., a, b] if a == b && base.len() >= 4 && !matches!(b, b'l' | b's' | b'z') => {
            base[..base.len() - 1].to_owned()
        }
        _ => base.to_owned(),
    }
}

/// Stems that mean the same as `term` (a stem), without `term` itself.
pub(crate) fn synonyms(term: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for group in SYNONYMS {
        if group.iter().any(|word| stem(word) == term) {
            for word in *group {
                let other = stem(word);
                if other != term && !found.contains(&other) {
                    found.push(other);
                }
            }
        }
    }
    found
}

/// Stems a query word also finds through [`RELATED`], without the word itself and its synonyms.
pub(crate) fn related(term: &str) -> Vec<String> {
    let synonyms = synonyms(term);
    let mut found: Vec<String> = Vec::new();
    for (asked, said) in RELATED {
        if asked.iter().any(|word| stem(word) == term) {
            for word in *said {
                let other = stem(word);
                if other != term && !synonyms.contains(&other) && !found.contains(&other) {
                    found.push(other);
                }
            }
        }
    }
    found
}

/// Levenshtein distance between two strings, counted in characters; gives up (returns
/// `limit + 1`) once it is certain the distance is over `limit`.
pub(crate) fn edit_distance(left: &str, right: &str, limit: usize) -> usize {
    let left: Vec<char> = left.chars().collect();
    let right: Vec<char> = right.chars().collect();
    bounded_edit_distance(&left, &right, limit)
}

/// [`edit_distance`] over characters (or bytes, for ASCII text). Only the cells within `limit` of the diagonal are
/// computed (a path outside that band costs more than `limit`), so the work is
/// `left.len() * (2 * limit + 1)` at most, however long the strings are.
pub(crate) fn bounded_edit_distance<T: PartialEq>(left: &[T], right: &[T], limit: usize) -> usize {
    let over = limit.saturating_add(1);
    if left.len().abs_diff(right.len()) > limit {
        return over;
    }
    let columns = right.len();
    // Distances clamped to `over`: a clamped cell stays over the limit whatever follows it.
    let mut previous: Vec<usize> = (0..=columns).map(|column| column.min(over)).collect();
    let mut current = vec![over; columns + 1];
    for (row, left_char) in left.iter().enumerate() {
        let row = row + 1;
        let low = row.saturating_sub(limit).max(1);
        let high = row.saturating_add(limit).min(columns);
        // The cells just outside the band are read by this row and the next one.
        current[low - 1] = if low == 1 { row.min(over) } else { over };
        if high < columns {
            current[high + 1] = over;
        }
        let mut row_minimum = current[low - 1];
        for column in low..=high {
            let substitution = previous[column - 1] + usize::from(*left_char != right[column - 1]);
            let value = substitution
                .min(previous[column] + 1)
                .min(current[column - 1] + 1)
                .min(over);
            current[column] = value;
            row_minimum = row_minimum.min(value);
        }
        if row_minimum > limit {
            return over;
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[columns].min(over)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_names() {
        assert_eq!(words("get-sum"), ["get", "sum"]);
        assert_eq!(
            words("list_directory_with_sizes"),
            ["list", "directory", "with", "sizes"]
        );
        assert_eq!(words("entityType"), ["entity", "type"]);
        assert_eq!(
            words("HTMLParser.parse2D"),
            ["html", "parser", "parse", "2", "d"]
        );
        assert_eq!(words("  "), Vec::<String>::new());
    }

    #[test]
    fn stems() {
        for (word, expected) in [
            ("numbers", "number"),
            ("creating", "creat"),
            ("create", "creat"),
            ("creates", "creat"),
            ("created", "creat"),
            ("entities", "entity"),
            ("running", "run"),
            ("added", "add"),
            ("add", "add"),
            ("adding", "add"),
            ("filling", "fill"),
            ("files", "fil"),
            ("file", "fil"),
            ("searches", "search"),
            ("status", "status"),
            ("process", "process"),
        ] {
            assert_eq!(stem(word), expected, "{word}");
        }
    }

    #[test]
    fn synonyms_are_stems() {
        assert!(synonyms("add").contains(&"sum".to_owned()));
        assert!(synonyms("sum").contains(&"add".to_owned()));
        assert!(synonyms("creat").contains(&"mak".to_owned()));
        assert!(synonyms("zebra").is_empty());
    }

    #[test]
    fn distances() {
        assert_eq!(edit_distance("ad", "add", 2), 1);
        assert_eq!(edit_distance("kitten", "sitting", 5), 3);
        assert_eq!(edit_distance("kitten", "sitting", 1), 2);
        assert_eq!(edit_distance("", "abc", 5), 3);
        assert_eq!(edit_distance("abc", "abc", 0), 0);
        assert_eq!(edit_distance("abc", "abd", 0), 1);
        assert_eq!(edit_distance("ab", "ba", usize::MAX), 2);
    }

    /// The full table, for comparison.
    fn plain_edit_distance(left: &[char], right: &[char]) -> usize {
        let mut previous: Vec<usize> = (0..=right.len()).collect();
        for (i, left_char) in left.iter().enumerate() {
            let mut current = vec![i + 1; right.len() + 1];
            for (j, right_char) in right.iter().enumerate() {
                current[j + 1] = (previous[j] + usize::from(left_char != right_char))
                    .min(previous[j + 1] + 1)
                    .min(current[j] + 1);
            }
            previous = current;
        }
        previous[right.len()]
    }

    /// The band gives the full table's answer (or "over the limit" exactly when it is), for
    /// every limit, on strings from a small alphabet where edits interact most.
    #[test]
    fn the_band_agrees_with_the_full_table() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        for _ in 0..3000 {
            let mut word = |length: u64| -> Vec<char> {
                (0..next(length + 1))
                    .map(|_| ['a', 'b', 'c', 'é'][next(4) as usize])
                    .collect()
            };
            let (left, right) = (word(12), word(12));
            let exact = plain_edit_distance(&left, &right);
            for limit in 0..14 {
                let expected = if exact > limit { limit + 1 } else { exact };
                assert_eq!(
                    bounded_edit_distance(&left, &right, limit),
                    expected,
                    "{left:?} {right:?} limit {limit}"
                );
            }
        }
    }
}
