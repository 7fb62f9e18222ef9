//! The guest languages, each registered once here: its names, its file extensions and the
//! engine that runs it. Everything else a language brings lives in its engine's folder
//! (`javascript/`, `python/`); docs/architecture.md ("A guest language") lists what that is.

/// The language of a guest program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Language {
    /// JavaScript (ES2023 and later, as QuickJS-NG runs it).
    JavaScript,
    /// TypeScript: types are stripped, nothing is type-checked.
    TypeScript,
    /// Python 3, the subset the Monty interpreter runs (see `docs/python.md`).
    Python,
}

/// The engine that runs a language's programs, each in a folder of this crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// QuickJS-NG (`javascript/`): JavaScript, and TypeScript with its types stripped.
    QuickJs,
    /// Monty (`python/`): Python.
    Monty,
}

/// One language's registration.
struct Registration {
    language: Language,
    /// How the language is named in requests, metrics and traces.
    name: &'static str,
    /// Other names a request may use for it.
    aliases: &'static [&'static str],
    /// File extensions `toolweave run` reads as this language.
    extensions: &'static [&'static str],
    engine: Engine,
}

/// Every guest language, in the order they are listed to users.
const LANGUAGES: &[Registration] = &[
    Registration {
        language: Language::TypeScript,
        name: "typescript",
        aliases: &["ts"],
        extensions: &["ts", "mts", "cts"],
        engine: Engine::QuickJs,
    },
    Registration {
        language: Language::JavaScript,
        name: "javascript",
        aliases: &["js"],
        extensions: &["js", "mjs", "cjs"],
        engine: Engine::QuickJs,
    },
    Registration {
        language: Language::Python,
        name: "python",
        aliases: &["py"],
        extensions: &["py"],
        engine: Engine::Monty,
    },
];

impl Language {
    fn registration(self) -> &'static Registration {
        LANGUAGES
            .iter()
            .find(|registration| registration.language == self)
            // Every variant has a registration: the test below checks each one.
            .unwrap_or(&LANGUAGES[0])
    }

    /// The language's name: `typescript`, `javascript`, `python`.
    pub fn name(self) -> &'static str {
        self.registration().name
    }

    /// The language a request names: its name or an alias, in any case.
    pub fn from_name(name: &str) -> Option<Self> {
        let name = name.to_ascii_lowercase();
        LANGUAGES
            .iter()
            .find(|registration| {
                registration.name == name || registration.aliases.contains(&name.as_str())
            })
            .map(|registration| registration.language)
    }

    /// The language of a file with extension `extension` (without its dot).
    pub fn from_extension(extension: &str) -> Option<Self> {
        LANGUAGES
            .iter()
            .find(|registration| registration.extensions.contains(&extension))
            .map(|registration| registration.language)
    }

    /// The file extensions of every language, each with its dot: `.ts, .mts, ...`.
    pub fn every_extension() -> Vec<&'static str> {
        LANGUAGES
            .iter()
            .flat_map(|registration| registration.extensions.iter().copied())
            .collect()
    }

    /// The engine that runs this language's programs.
    pub fn engine(self) -> Engine {
        self.registration().engine
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_is_registered_once() {
        for language in [Language::JavaScript, Language::TypeScript, Language::Python] {
            let found = LANGUAGES
                .iter()
                .filter(|registration| registration.language == language)
                .count();
            assert_eq!(found, 1, "{language:?}");
            assert_eq!(Language::from_name(language.name()), Some(language));
        }
        assert_eq!(Language::from_name("PY"), Some(Language::Python));
        assert_eq!(Language::from_name("ruby"), None);
        assert_eq!(Language::from_extension("mjs"), Some(Language::JavaScript));
        assert_eq!(Language::from_extension("rb"), None);
        assert_eq!(Language::TypeScript.engine(), Engine::QuickJs);
    }
}
