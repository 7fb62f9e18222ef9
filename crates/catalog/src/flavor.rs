//! The language tools are described in: TypeScript declarations or Python stubs, each read from
//! the one catalog.

use crate::{Catalog, Entry};

/// The language tools are described in: TypeScript declarations or Python stubs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Flavor {
    /// `.d.ts` declarations and signatures.
    #[default]
    TypeScript,
    /// `.pyi`-style stubs and signatures.
    Python,
}

impl Flavor {
    /// What guest code of this flavor calls to search the catalog.
    pub fn search_function(self) -> &'static str {
        match self {
            Self::TypeScript => "searchTools",
            Self::Python => "search_tools",
        }
    }

    /// The compact one-line signature of `entry`.
    pub fn signature(self, catalog: &Catalog, entry: &Entry) -> String {
        match self {
            Self::TypeScript => catalog.signature(entry),
            Self::Python => catalog.python_signature(entry),
        }
    }

    /// The full declaration of `entry`.
    pub fn declaration(self, catalog: &Catalog, entry: &Entry) -> String {
        match self {
            Self::TypeScript => catalog.declaration(entry),
            Self::Python => catalog.python_stub(entry),
        }
    }

    /// The full declarations of `entries`, one block (or class) per server.
    pub fn declarations_of(self, catalog: &Catalog, entries: &[&Entry]) -> String {
        match self {
            Self::TypeScript => catalog.declarations_of(entries),
            Self::Python => catalog.python_stubs_of(entries),
        }
    }

    /// The declarations of every tool of `catalog`, as one `.d.ts` or one stub file.
    pub fn declarations(self, catalog: &Catalog) -> String {
        match self {
            Self::TypeScript => catalog.declarations(),
            Self::Python => catalog.python_stubs(),
        }
    }
}
