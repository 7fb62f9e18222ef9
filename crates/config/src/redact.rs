//! Which detectors the settings' `"redact"` (and `--redact`) choose: what is replaced by a token
//! in everything the model reads. The detection itself is the core's (`redaction/`); this is
//! only the names, so that a name no detector has is a config error naming those there are.

use serde::Deserialize;

/// One detector of what the model should not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Detector {
    /// Private keys, tokens of the common providers by their formats (AWS, GitHub, Slack,
    /// Stripe, Google, OpenAI, Anthropic, JWTs) and high-entropy strings where credentials go
    /// (`"password": "…"`, `token=…`, `Authorization: Bearer …`).
    Secrets,
    /// Email addresses.
    Email,
    /// Phone numbers: international (`+44 20 7946 0958`) and North American
    /// (`(415) 555-0132`, `415-555-0132`).
    Phone,
    /// Payment card numbers of the major schemes that pass the Luhn check.
    Card,
    /// US Social Security numbers (`123-45-6789`, within the ranges ever issued).
    Ssn,
    /// UK National Insurance numbers (`AB 12 34 56 C`).
    Nino,
    /// International bank account numbers whose check digits are right (mod 97).
    Iban,
}

impl Detector {
    /// Every detector, in the order the settings document them.
    pub const ALL: [Detector; 7] = [
        Detector::Secrets,
        Detector::Email,
        Detector::Phone,
        Detector::Card,
        Detector::Ssn,
        Detector::Nino,
        Detector::Iban,
    ];

    /// The name the settings use (`"email"`), also the audit log's.
    pub fn as_str(self) -> &'static str {
        match self {
            Detector::Secrets => "secrets",
            Detector::Email => "email",
            Detector::Phone => "phone",
            Detector::Card => "card",
            Detector::Ssn => "ssn",
            Detector::Nino => "nino",
            Detector::Iban => "iban",
        }
    }

    /// What its tokens are called: `<secret_1>`, `<email_1>`.
    pub fn token_label(self) -> &'static str {
        match self {
            Detector::Secrets => "secret",
            other => other.as_str(),
        }
    }

    /// Every detector's name, for messages: `"secrets", "email", …`.
    pub fn names() -> String {
        Self::ALL
            .iter()
            .map(|detector| format!("\"{}\"", detector.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::fmt::Display for Detector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Detector {
    type Err = String;

    /// A detector by its name; an unknown one is refused naming those there are.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|detector| detector.as_str() == name)
            .ok_or_else(|| {
                format!(
                    "unknown detector \"{name}\": the detectors are {}",
                    Detector::names()
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_an_unknown_one_names_the_known() {
        for detector in Detector::ALL {
            assert_eq!(detector.as_str().parse::<Detector>(), Ok(detector));
        }
        let error = "emails".parse::<Detector>().unwrap_err();
        assert_eq!(
            error,
            "unknown detector \"emails\": the detectors are \"secrets\", \"email\", \"phone\", \
             \"card\", \"ssn\", \"nino\", \"iban\""
        );
    }
}
