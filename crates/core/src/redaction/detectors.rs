//! What in a text is a secret or personal data, by detector: the patterns, and the checks a
//! match must pass (a card number's Luhn digit, an IBAN's mod-97 check, a credential's entropy).
//!
//! A detector is a few plain patterns, each with a check that throws out what only looks like a
//! match: the formats of the providers' tokens are distinctive, personal data is not, so those
//! patterns ask for the separators people write (`415-555-0132`, never a bare run of digits)
//! and the checksums where there are any. What they find and miss is measured over the corpus in
//! `crates/core/tests/redaction/` (`docs/benchmarks.md`).

use std::sync::LazyLock;

use regex::{Regex, RegexSet};
use toolweave_config::Detector;

/// One match: which detector, and where in the text (byte offsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detected {
    /// The detector whose pattern matched.
    pub detector: Detector,
    /// Where the match begins.
    pub start: usize,
    /// Where it ends.
    pub end: usize,
}

/// A pattern: its detector, its regex, whether the value is the whole match or the first of its
/// groups that took part, and the check the value must pass.
struct Pattern {
    detector: Detector,
    source: String,
    whole: bool,
    check: fn(&str) -> bool,
}

/// A pattern whose value is the whole match.
fn whole(detector: Detector, check: fn(&str) -> bool, source: &str) -> Pattern {
    Pattern {
        detector,
        source: source.to_owned(),
        whole: true,
        check,
    }
}

/// A pattern whose value is the first of its groups that took part (what is around it only
/// places it: a key before it, a boundary the regex crate has no look-behind for).
fn grouped(detector: Detector, check: fn(&str) -> bool, source: &str) -> Pattern {
    Pattern {
        whole: false,
        ..whole(detector, check, source)
    }
}

/// A check every match passes.
fn always(_: &str) -> bool {
    true
}

/// The key names of credentials (`password`, `api_key`, `clientSecret`, `x-api-key`), with any
/// prefix of words (`db_password`, `github.token`).
const CREDENTIAL_KEY: &str = r"(?:[A-Za-z0-9]+[_.\-])*(?i:password|passwd|pwd|passphrase|secret|client[_\-]?secret|secret[_\-]?key|api[_\-]?key|apikey|access[_\-]?key(?:[_\-]?id)?|secret[_\-]?access[_\-]?key|private[_\-]?key|auth[_\-]?token|access[_\-]?token|refresh[_\-]?token|id[_\-]?token|bearer[_\-]?token|token|session[_\-]?(?:id|token|key)|credentials?|x[_\-]api[_\-]key|signing[_\-]?key|webhook[_\-]?secret)";

/// Every pattern: the regexes are compiled alone ([`PATTERN_REGEXES`]) and together
/// ([`PATTERN_SET`], which tells in one pass over a text which of them could match).
fn patterns() -> Vec<Pattern> {
    let mut patterns = secret_patterns();
    patterns.extend(personal_patterns());
    patterns
}

/// What `secrets` finds.
fn secret_patterns() -> Vec<Pattern> {
    use Detector::Secrets;
    vec![
        // PEM private keys, whole or cut short, with real or JSON-escaped line breaks.
        whole(
            Secrets,
            always,
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[A-Za-z0-9+/=\s:,]|\\[nr]|-[A-Za-z0-9])*(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?",
        ),
        // AWS access key ids.
        whole(
            Secrets,
            always,
            r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}\b",
        ),
        // GitHub: personal, OAuth, user-to-server, server-to-server and refresh tokens, and
        // fine-grained personal access tokens.
        whole(
            Secrets,
            always,
            r"\b(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})\b",
        ),
        // Slack tokens and incoming webhooks.
        whole(
            Secrets,
            always,
            r"\bxox[abposre]-[A-Za-z0-9\-]{10,250}|\bxapp-\d-[A-Za-z0-9\-]{10,250}|https://hooks\.slack\.com/services/[A-Za-z0-9/_]{20,}",
        ),
        // Stripe secret and restricted keys, webhook secrets.
        whole(
            Secrets,
            always,
            r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,247}\b|\bwhsec_[A-Za-z0-9]{24,}\b",
        ),
        // Google API keys.
        whole(Secrets, always, r"\bAIza[0-9A-Za-z_\-]{35}"),
        // OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-) and Anthropic (sk-ant-api03-) keys.
        whole(
            Secrets,
            letters_and_digits,
            r"\bsk-(?:ant-[a-z]+[0-9]*-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
        ),
        // JSON Web Tokens: a header and a payload that are JSON objects, and a signature.
        whole(
            Secrets,
            always,
            r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*",
        ),
        // A credential's key and its value: `"password": "…"`, `token=…`, `API_KEY: …`.
        grouped(
            Secrets,
            high_entropy,
            &format!(
                r#"\b{CREDENTIAL_KEY}(?:\\?["'])?\s*[:=]\s*(?:\\?"([^\s"\\]{{8,256}})|'([^\s'\\]{{8,256}})|([^\s"'<>,;&{{}}\[\]\\]{{8,256}}))"#
            ),
        ),
        // Credentials of HTTP authorization: `Authorization: Bearer …`, `Basic …`.
        grouped(
            Secrets,
            high_entropy,
            r"(?i:\b(?:bearer|basic)\s+)([A-Za-z0-9\-._~+/]{16,}=*)",
        ),
    ]
}

/// What the detectors of personal data find.
fn personal_patterns() -> Vec<Pattern> {
    use Detector::{Card, Email, Iban, Nino, Phone, Ssn};
    vec![
        whole(
            Email,
            email,
            r"\b[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}\b",
        ),
        // International numbers: a `+`, the country code and at least eight digits in all.
        grouped(
            Phone,
            international_phone,
            r"(?:^|[^\w+/=.])(\+[1-9][0-9 ().\-]{6,22}[0-9])\b",
        ),
        // North American numbers with their separators: (415) 555-0132, 415-555-0132,
        // 415.555.0132, 1 415 555 0132.
        grouped(
            Phone,
            always,
            r"(?:^|[^\w+.\-/])((?:1[ .\-])?(?:\([2-9][0-9]{2}\) ?|[2-9][0-9]{2}[ .\-])[2-9][0-9]{2}[ .\-][0-9]{4})\b",
        ),
        grouped(Card, card, r"(?:^|[^\w.\-])([0-9](?:[ \-]?[0-9]){12,18})\b"),
        grouped(
            Ssn,
            ssn,
            r"(?:^|[^\w.\-])([0-9]{3}-[0-9]{2}-[0-9]{4})(?:$|[^\w\-])",
        ),
        grouped(
            Nino,
            nino,
            r"(?:^|[^\w\-])([A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D])\b",
        ),
        grouped(
            Iban,
            iban,
            r"(?:^|[^\w\-])([A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?)\b",
        ),
    ]
}

/// The patterns, each compiled alone: the ones [`PATTERN_SET`] says could match are run.
static PATTERN_REGEXES: LazyLock<Vec<(Pattern, Regex)>> = LazyLock::new(|| {
    patterns()
        .into_iter()
        .filter_map(|pattern| {
            // The patterns are constants: one that does not compile is left out, and the test
            // that counts them fails.
            Regex::new(&pattern.source)
                .ok()
                .map(|regex| (pattern, regex))
        })
        .collect()
});

/// Every pattern at once, to learn in one pass which could match a text.
static PATTERN_SET: LazyLock<Option<RegexSet>> =
    LazyLock::new(|| RegexSet::new(PATTERN_REGEXES.iter().map(|(_, regex)| regex.as_str())).ok());

/// A credential's key alone (an object's key whose value is a credential).
static CREDENTIAL_KEY_ALONE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(&format!("^{CREDENTIAL_KEY}$")).ok());

/// Compiles the patterns now, so the first answer that is redacted does not pay for it.
pub(crate) fn prepare() {
    LazyLock::force(&PATTERN_SET);
    LazyLock::force(&CREDENTIAL_KEY_ALONE);
}

/// What `chosen`'s detectors find in `text`: matches that do not overlap, in order. Where two
/// overlap, the one that begins first wins, and of two that begin together a secret, else the
/// longer.
pub fn detect(text: &str, chosen: &[Detector]) -> Vec<Detected> {
    let Some(set) = PATTERN_SET.as_ref() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for index in set.matches(text).iter() {
        let (pattern, regex) = &PATTERN_REGEXES[index];
        if !chosen.contains(&pattern.detector) {
            continue;
        }
        for captures in regex.captures_iter(text) {
            let value = if pattern.whole {
                captures.get(0)
            } else {
                captures.iter().skip(1).flatten().next()
            };
            let Some(value) = value else {
                continue;
            };
            if (pattern.check)(value.as_str()) {
                found.push(Detected {
                    detector: pattern.detector,
                    start: value.start(),
                    end: value.end(),
                });
            }
        }
    }
    // Of two that begin together, a secret first (`ghp_…@github.com` in a URL is a token, not an
    // address), then the longer.
    found.sort_by_key(|detected| {
        (
            detected.start,
            detected.detector != Detector::Secrets,
            std::cmp::Reverse(detected.end),
        )
    });
    let mut kept: Vec<Detected> = Vec::with_capacity(found.len());
    for detected in found {
        if kept.last().is_none_or(|last| detected.start >= last.end) {
            kept.push(detected);
        }
    }
    kept
}

/// Whether an object's key names a credential (`password`, `apiKey`, `client_secret`): its
/// value is then a secret when [`high_entropy`] says it could be one.
pub(crate) fn credential_key(key: &str) -> bool {
    key.len() <= 64
        && CREDENTIAL_KEY_ALONE
            .as_ref()
            .is_some_and(|regex| regex.is_match(key))
}

/// Whether a credential's value looks generated rather than a word, a placeholder or a
/// reference: at least 8 characters without spaces, two kinds of letters and digits, and at
/// least 3 bits of entropy a character.
pub(crate) fn high_entropy(value: &str) -> bool {
    let length = value.chars().count();
    if !(8..=4096).contains(&length) || value.contains(char::is_whitespace) {
        return false;
    }
    // `${TOKEN}`, `%API_KEY%`, `{{secret}}`, `<redacted>`, `********`.
    if value.starts_with(['$', '%', '{', '<', '*']) || value.contains("xxxx") {
        return false;
    }
    let kinds = [
        value.chars().any(|c| c.is_ascii_lowercase()),
        value.chars().any(|c| c.is_ascii_uppercase()),
        value.chars().any(|c| c.is_ascii_digit()),
    ]
    .into_iter()
    .filter(|kind| *kind)
    .count();
    kinds >= 2 && entropy(value) >= 3.0
}

/// Shannon entropy in bits a character.
fn entropy(value: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    let mut total = 0_u32;
    for c in value.chars() {
        *counts.entry(c).or_insert(0_u32) += 1;
        total += 1;
    }
    let total = f64::from(total);
    counts
        .values()
        .map(|count| {
            let share = f64::from(*count) / total;
            -share * share.log2()
        })
        .sum()
}

/// A provider key's body has letters and digits (`sk-` before an ordinary hyphenated word
/// does not).
fn letters_and_digits(value: &str) -> bool {
    value.chars().any(|c| c.is_ascii_digit()) && value.chars().any(|c| c.is_ascii_alphabetic())
}

/// An address, unless it is a picture's name (`icon@2x.png`) or an SSH remote (`git@host`).
fn email(value: &str) -> bool {
    const FILE_ENDINGS: [&str; 9] = [
        "png", "jpg", "jpeg", "gif", "svg", "webp", "ico", "avif", "bmp",
    ];
    let Some((local, domain)) = value.rsplit_once('@') else {
        return false;
    };
    let ending = domain.rsplit('.').next().unwrap_or_default();
    local != "git" && !FILE_ENDINGS.contains(&ending.to_ascii_lowercase().as_str())
}

/// An international number has 8 to 15 digits (E.164) and no doubled separator.
fn international_phone(value: &str) -> bool {
    let digits = value.chars().filter(char::is_ascii_digit).count();
    (8..=15).contains(&digits)
        && !["  ", "--", "..", "((", "))", "-.", ".-"]
            .iter()
            .any(|doubled| value.contains(doubled))
}

/// A card number: 13 to 19 digits of a major scheme's ranges, written whole or in the groups
/// cards print (4-4-4-4, 4-6-5 and the like, with one kind of separator), passing the Luhn check.
fn card(value: &str) -> bool {
    let digits: Vec<u32> = value.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let separators: Vec<char> = value.chars().filter(|c| !c.is_ascii_digit()).collect();
    if let Some(first) = separators.first() {
        if separators.iter().any(|separator| separator != first) {
            return false;
        }
        let groups: Vec<usize> = value.split(*first).map(str::len).collect();
        let printed = matches!(
            groups.as_slice(),
            [4, 4, 4, 4] | [4, 4, 4, 4, 3] | [4, 4, 4, 1] | [4, 6, 5] | [4, 6, 4] | [4, 4, 4, 2]
        );
        if !printed {
            return false;
        }
    }
    scheme(&digits) && luhn(&digits)
}

/// Whether the digits begin as a major scheme's cards do: Visa, Mastercard, American Express,
/// Discover, JCB, Diners Club, UnionPay.
fn scheme(digits: &[u32]) -> bool {
    let prefix = |count: usize| {
        digits
            .iter()
            .take(count)
            .fold(0_u32, |number, digit| number * 10 + digit)
    };
    let length = digits.len();
    match digits.first() {
        Some(4) => matches!(length, 13 | 16 | 19),
        Some(5) => (51..=55).contains(&prefix(2)) && length == 16,
        Some(2) => (2221..=2720).contains(&prefix(4)) && length == 16,
        Some(3) => {
            (matches!(prefix(2), 34 | 37) && length == 15)
                || ((3528..=3589).contains(&prefix(4)) && (16..=19).contains(&length))
                || (matches!(prefix(2), 36 | 38 | 39) || (300..=305).contains(&prefix(3)))
                    && (14..=19).contains(&length)
        }
        Some(6) => {
            (prefix(4) == 6011 || prefix(2) == 65 || (644..=649).contains(&prefix(3)))
                && (16..=19).contains(&length)
                || prefix(2) == 62 && (16..=19).contains(&length)
        }
        _ => false,
    }
}

/// The Luhn check: the digits, every second one from the right doubled, sum to a multiple of 10.
fn luhn(digits: &[u32]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(position, digit)| {
            if position % 2 == 1 {
                let doubled = digit * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                *digit
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// A US Social Security number within the ranges ever issued: no area 000, 666 or 9xx, no
/// group 00, no serial 0000.
fn ssn(value: &str) -> bool {
    let mut parts = value.split('-');
    let (Some(area), Some(group), Some(serial)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    area != "000" && area != "666" && !area.starts_with('9') && group != "00" && serial != "0000"
}

/// A UK National Insurance number: not one of the prefixes never issued, written whole or with
/// a space between every pair.
fn nino(value: &str) -> bool {
    const NEVER_ISSUED: [&str; 7] = ["BG", "GB", "NK", "KN", "TN", "NT", "ZZ"];
    let spaces = value.matches(' ').count();
    (spaces == 0 || spaces == 4) && !NEVER_ISSUED.contains(&&value[..2])
}

/// An IBAN: as long as its country's (where the country is one of those listed), and its check
/// digits right (the number, its first four characters moved to the end and letters as 10 to
/// 35, leaves 1 divided by 97).
fn iban(value: &str) -> bool {
    const LENGTHS: [(&str, usize); 34] = [
        ("AD", 24),
        ("AT", 20),
        ("BE", 16),
        ("BG", 22),
        ("CH", 21),
        ("CY", 28),
        ("CZ", 24),
        ("DE", 22),
        ("DK", 18),
        ("EE", 20),
        ("ES", 24),
        ("FI", 18),
        ("FR", 27),
        ("GB", 22),
        ("GR", 27),
        ("HR", 21),
        ("HU", 28),
        ("IE", 22),
        ("IS", 26),
        ("IT", 27),
        ("LI", 21),
        ("LT", 20),
        ("LU", 20),
        ("LV", 21),
        ("MC", 27),
        ("MT", 31),
        ("NL", 18),
        ("NO", 15),
        ("PL", 28),
        ("PT", 25),
        ("RO", 24),
        ("SE", 24),
        ("SI", 19),
        ("SK", 24),
    ];
    let compact: String = value.chars().filter(|c| *c != ' ').collect();
    let length = compact.len();
    let fits = match LENGTHS
        .iter()
        .find(|(country, _)| compact.starts_with(country))
    {
        Some((_, expected)) => length == *expected,
        None => (15..=34).contains(&length),
    };
    if !fits {
        return false;
    }
    let (head, tail) = compact.split_at(4);
    let mut remainder = 0_u32;
    for c in tail.chars().chain(head.chars()) {
        let Some(number) = c.to_digit(36) else {
            return false;
        };
        remainder = if number < 10 {
            (remainder * 10 + number) % 97
        } else {
            (remainder * 100 + number) % 97
        };
    }
    remainder == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(Detector, &str)> {
        detect(text, &Detector::ALL)
            .into_iter()
            .map(|detected| (detected.detector, &text[detected.start..detected.end]))
            .collect()
    }

    #[test]
    fn every_pattern_compiles() {
        assert_eq!(PATTERN_REGEXES.len(), patterns().len());
        assert!(PATTERN_SET.is_some());
        assert!(CREDENTIAL_KEY_ALONE.is_some());
    }

    #[test]
    fn the_checksums_hold_and_fail() {
        assert!(card("4111 1111 1111 1111"));
        assert!(!card("4111 1111 1111 1112"));
        assert!(!card("4111 11111111 1111"));
        assert!(card("378282246310005"));
        assert!(iban("GB82 WEST 1234 5698 7654 32"));
        assert!(!iban("GB82 WEST 1234 5698 7654 33"));
        assert!(iban("DE89370400440532013000"));
        assert!(ssn("123-45-6789"));
        assert!(!ssn("666-45-6789"));
        assert!(!ssn("123-00-6789"));
        assert!(nino("AB 12 34 56 C"));
        assert!(!nino("GB 12 34 56 C"));
    }

    #[test]
    fn matches_do_not_overlap_and_keep_the_value_alone() {
        assert_eq!(
            found(r#"{"password": "Tr0ub4dor&3x", "mail": "ann@example.org"}"#),
            [
                (Detector::Secrets, "Tr0ub4dor&3x"),
                (Detector::Email, "ann@example.org")
            ]
        );
        assert_eq!(
            found(
                "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
            ),
            [(
                Detector::Secrets,
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
            )]
        );
        assert_eq!(
            found("call +44 20 7946 0958 or (415) 555-0132"),
            [
                (Detector::Phone, "+44 20 7946 0958"),
                (Detector::Phone, "(415) 555-0132")
            ]
        );
    }

    #[test]
    fn look_alikes_are_not_found() {
        for text in [
            "550e8400-e29b-41d4-a716-446655440000",
            "commit 3f786850e387550fdab836ed7e6dc881de23001b",
            "version 1.24.3, released 2024-03-15 10:30:00",
            "192.168.100.200 and 10.0.0.1:8080",
            "order ORD-2024-555-0132, 1,234,567 items, total 4111.11",
            "max_tokens=4096 and token_count: 1523",
            r#"{"apiKey": "${OPENAI_API_KEY}", "password": "********"}"#,
            "icon@2x.png and git@github.com:owner/repo.git",
            "sk-learn-is-not-a-key-at-all-really",
        ] {
            assert_eq!(found(text), [], "{text}");
        }
    }

    #[test]
    fn credential_keys_and_values() {
        for key in [
            "password",
            "db_password",
            "apiKey",
            "client_secret",
            "X-Api-Key",
        ] {
            assert!(credential_key(key), "{key}");
        }
        for key in ["token_count", "passwordHint", "author", "keys"] {
            assert!(!credential_key(key), "{key}");
        }
        assert!(high_entropy("Tr0ub4dor&3x"));
        assert!(!high_entropy("password"));
        assert!(!high_entropy("ANTHROPIC_API_KEY"));
    }
}
